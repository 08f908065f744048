//! Colour only on a terminal, and never when NO_COLOR is set.

use std::io::IsTerminal;

pub fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Ask a yes/no question on the terminal; anything but y/yes is no.
pub fn confirm(question: &str) -> std::io::Result<bool> {
    use std::io::Write;
    print!("{question} [y/N] ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(matches!(line.trim().to_lowercase().as_str(), "y" | "yes"))
}
