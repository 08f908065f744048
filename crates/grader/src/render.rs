//! Reports for people: the terminal (colour only when asked, i.e. on a TTY) and Markdown
//! (feedback files). JSON is `ExerciseReport::to_json`.

use crate::question_types::number::show;
use crate::report::{ExerciseReport, Outcome, QuestionResult};
use anstyle::{AnsiColor, Style};
use std::fmt::Write as _;

/// How a question's status is shown: the autograder's outcome, except for an answer it flagged
/// for the instructor (and no instructor has graded yet), which shows as awaiting review, its
/// points provisional, whatever the autograder made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Graded(Outcome),
    Review,
}

impl Status {
    fn of(q: &QuestionResult) -> Status {
        if q.needs_review && q.overridden.is_none() && q.outcome != Outcome::Unanswered {
            Status::Review
        } else {
            Status::Graded(q.outcome)
        }
    }

    fn marker(self) -> &'static str {
        match self {
            Status::Graded(Outcome::Right) => "✓",
            Status::Graded(Outcome::Partial) => "~",
            Status::Graded(Outcome::Wrong) => "✗",
            Status::Graded(Outcome::Unanswered) => "·",
            Status::Review => "?",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Status::Graded(outcome) => outcome.label(),
            Status::Review => "to review",
        }
    }

    fn style(self) -> Style {
        let colour = match self {
            Status::Graded(Outcome::Right) => AnsiColor::Green,
            Status::Graded(Outcome::Partial) | Status::Review => AnsiColor::Yellow,
            Status::Graded(Outcome::Wrong) => AnsiColor::Red,
            Status::Graded(Outcome::Unanswered) => AnsiColor::BrightBlack,
        };
        Style::new().fg_color(Some(colour.into()))
    }
}

fn style(outcome: Outcome) -> Style {
    Status::Graded(outcome).style()
}

fn paint(text: &str, style: Style, colour: bool) -> String {
    if colour {
        format!("{style}{text}{style:#}")
    } else {
        text.to_string()
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn points(q: &QuestionResult) -> String {
    format!("{}/{}", show(q.points), show(q.max_points))
}

/// The report as the terminal shows it after `course check N`.
pub fn terminal(report: &ExerciseReport, colour: bool) -> String {
    let mut out = String::new();
    let bold = Style::new().bold();
    let mut title = format!("Exercise {}: {}", report.exercise, report.title);
    if let Some(device) = &report.device {
        title.push_str(&format!(" ({device} run)"));
    }
    let _ = writeln!(out, "{}", paint(&title, bold, colour));
    if let Some(variant) = &report.variant {
        let _ = writeln!(
            out,
            "  {} {}",
            paint("Your variant:", bold, colour),
            one_line(variant)
        );
    }
    for q in &report.questions {
        let status = Status::of(q);
        let head = format!("{} {:<10}", status.marker(), status.label());
        // The id is the answers.toml field (or quiz question) and what overrides refer to.
        let _ = write!(
            out,
            "  {} {:>7}  {}: {}",
            paint(&head, status.style(), colour),
            points(q),
            q.id,
            q.label
        );
        if let Some(answer) = &q.answer {
            let _ = write!(out, "  → {}", one_line(answer));
        }
        let _ = writeln!(out);
        if !q.reason.is_empty() && q.outcome != Outcome::Unanswered {
            let _ = writeln!(out, "{:23}{}", "", one_line(&q.reason));
        }
        if let Some(o) = &q.overridden {
            let _ = writeln!(
                out,
                "{:23}overridden by the instructor (autograder: {}): {}",
                "",
                show(o.autograded_points),
                one_line(&o.reason)
            );
        }
        if let Some(context) = &q.context {
            let _ = writeln!(
                out,
                "{:23}{} {}",
                "",
                paint("Why:", bold, colour),
                one_line(context)
            );
        }
    }
    if !report.problems.is_empty() {
        let _ = writeln!(out, "{}", paint("Problems:", bold, colour));
        for p in &report.problems {
            let _ = writeln!(out, "  ! {p}");
        }
    }
    for note in &report.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    if report.solution_viewed_early {
        let _ = writeln!(
            out,
            "  note: the solution was shown before this exercise passed"
        );
    }
    let verdict = if report.passed {
        paint("PASSED", style(Outcome::Right), colour)
    } else {
        paint("NOT PASSED", style(Outcome::Wrong), colour)
    };
    let _ = writeln!(
        out,
        "Score: {}/{} ({}%), pass mark {}%: {verdict}",
        show(report.points),
        show(report.max_points),
        show(report.percent()),
        show(report.pass_mark * 100.0)
    );
    if report.needs_review() {
        let _ = writeln!(
            out,
            "Some answers need instructor review: the score is provisional."
        );
    }
    out
}

fn md_cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// The report as Markdown (one section of a feedback file).
pub fn markdown(report: &ExerciseReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Exercise {}: {}\n", report.exercise, report.title);
    if let Some(device) = &report.device {
        let _ = writeln!(out, "Measured on: {device}\n");
    }
    if let Some(variant) = &report.variant {
        let _ = writeln!(out, "Your variant: {}\n", one_line(variant));
    }
    if !report.questions.is_empty() {
        let _ = writeln!(out, "| | Question | Your answer | Points | Why |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for q in &report.questions {
            let mut why = md_cell(&q.reason);
            if let Some(o) = &q.overridden {
                why = format!(
                    "overridden by the instructor (autograder: {}): {}",
                    show(o.autograded_points),
                    md_cell(&o.reason)
                );
            }
            let answer = q
                .answer
                .as_deref()
                .map(|a| format!("`{}`", md_cell(a).replace('`', "'")))
                .unwrap_or_default();
            let status = Status::of(q);
            let _ = writeln!(
                out,
                "| {} {} | `{}` {} | {answer} | {} | {why} |",
                status.marker(),
                status.label(),
                q.id,
                md_cell(&q.label),
                points(q)
            );
        }
        let _ = writeln!(out);
    }
    let explained: Vec<&QuestionResult> = report
        .questions
        .iter()
        .filter(|q| q.context.is_some())
        .collect();
    if !explained.is_empty() {
        let _ = writeln!(out, "**Explanations**\n");
        for q in explained {
            let _ = writeln!(
                out,
                "- **{}**: {}",
                q.id,
                one_line(q.context.as_deref().unwrap_or(""))
            );
        }
        let _ = writeln!(out);
    }
    if !report.problems.is_empty() {
        let _ = writeln!(out, "**Problems**\n");
        for p in &report.problems {
            let _ = writeln!(out, "- {}", md_cell(&p.to_string()));
        }
        let _ = writeln!(out);
    }
    for note in &report.notes {
        let _ = writeln!(out, "Note: {note}\n");
    }
    if report.solution_viewed_early {
        let _ = writeln!(
            out,
            "Note: the solution was shown before this exercise passed.\n"
        );
    }
    let _ = writeln!(
        out,
        "**Score: {}/{} ({}%)**, pass mark {}%: {}.",
        show(report.points),
        show(report.max_points),
        show(report.percent()),
        show(report.pass_mark * 100.0),
        if report.passed {
            "passed"
        } else {
            "not passed"
        }
    );
    if report.needs_review() {
        let _ = writeln!(
            out,
            "\nSome answers need instructor review: the score is provisional."
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::QuestionResult;

    fn report() -> ExerciseReport {
        let mut r = ExerciseReport::new(1, "T", 1.0);
        r.questions.push(
            QuestionResult::new("q", "a question", 1.0)
                .answer("x")
                .right(""),
        );
        r.total();
        r
    }

    #[test]
    fn colour_only_when_asked() {
        assert!(terminal(&report(), true).contains("\x1b["));
        assert!(!terminal(&report(), false).contains('\x1b'));
        assert!(!markdown(&report()).contains('\x1b'));
    }

    #[test]
    fn a_flagged_answer_shows_as_awaiting_review_not_as_right() {
        // plan.why is worth 0 and "right" whatever it says; when the rubric flags it, the report
        // must not show a tick above "needs instructor review".
        let mut r = ExerciseReport::new(3, "T", 1.0);
        let mut why = QuestionResult::new("plan.why", "Why", 0.0)
            .answer("fuse it")
            .right("missing: what the fix changes (needs instructor review)");
        why.needs_review = true;
        r.questions.push(why.clone());
        let mut awarded = why.clone();
        awarded.id = "route-why".into();
        awarded.overridden = Some(crate::report::OverrideNote {
            autograded_points: 0.0,
            reason: "read and awarded".into(),
        });
        r.questions.push(awarded);
        r.total();
        let shown = terminal(&r, false);
        let line = shown.lines().find(|l| l.contains("plan.why")).unwrap();
        assert!(
            line.trim_start().starts_with("? to review") && line.contains("0/0"),
            "{shown}"
        );
        assert!(!line.contains('✓') && !line.contains("right"), "{shown}");
        // Once an instructor has graded it, the outcome shows again.
        assert!(
            shown
                .lines()
                .any(|l| l.contains("route-why") && l.trim_start().starts_with("✓ right")),
            "{shown}"
        );
        let md = markdown(&r);
        assert!(
            md.contains("| ? to review | `plan.why`") && md.contains("| ✓ right | `route-why`"),
            "{md}"
        );
    }
}
