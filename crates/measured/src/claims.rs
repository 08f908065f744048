//! Claims: the book's sentences whose truth depends on the machine, each tied to a check over the
//! measured files.
//!
//! A page writes `{{#claim NAME}}A sentence.{{#endclaim}}`. The claim `NAME` lists the figures it
//! reads (`reads`, full `NAME.KEY`s) and checks them: [`Outcome::Holds`], or
//! [`Outcome::Otherwise`] with what was measured instead, figures included, which the page shows
//! after the sentence ("This machine measured otherwise: …"). The committed reference run passes
//! every claim (`book-measure --check`); a reader's machine may not, and the book still builds.
//!
//! To add a claim: list it in `book/measured/wanted/PAGE.tsv` (`claim:NAME`, the condition), add
//! a [`Claim`] to [`CLAIMS`] below with the same condition in `holds_when`, and a test.

use std::collections::BTreeSet;

use crate::error::MeasuredError;
use crate::set::{split_key, Measured};

/// What a claim's check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Holds,
    /// What the files measured instead, said with the figures ("the fused MLP took 22.7 ms a
    /// step against the stock MLP's 22.6 ms: 1.00×").
    Otherwise(String),
}

impl Outcome {
    /// `Holds` when `holds`, else `Otherwise(otherwise())`.
    pub fn holds_if(holds: bool, otherwise: impl FnOnce() -> String) -> Self {
        if holds {
            Outcome::Holds
        } else {
            Outcome::Otherwise(otherwise())
        }
    }
}

/// One named claim.
#[derive(Debug)]
pub struct Claim {
    /// Kebab-case, as the page writes it: `{{#claim NAME}}`.
    pub name: &'static str,
    /// Every figure the check reads, as `NAME.KEY`; reading another one is an error.
    pub reads: &'static [&'static str],
    /// The condition, in words (as in the wanted file).
    pub holds_when: &'static str,
    pub check: fn(&Reader) -> Result<Outcome, MeasuredError>,
}

/// What a claim's check sees: the figures it declared, and no others.
pub struct Reader<'a> {
    claim: &'a Claim,
    measured: &'a Measured,
}

impl Reader<'_> {
    fn declared(&self, key: &str) -> Result<(), MeasuredError> {
        if self.claim.reads.contains(&key) {
            Ok(())
        } else {
            Err(MeasuredError::Undeclared {
                claim: self.claim.name.to_string(),
                key: key.into(),
            })
        }
    }

    /// The value of the numeric figure `NAME.KEY`.
    pub fn number(&self, key: &str) -> Result<f64, MeasuredError> {
        self.declared(key)?;
        self.measured.number(key)
    }

    /// The figure `NAME.KEY` as the book prints it.
    pub fn render(&self, key: &str) -> Result<String, MeasuredError> {
        self.declared(key)?;
        self.measured.render(key)
    }

    /// The text of the figure `NAME.KEY` (a number rendered).
    pub fn text(&self, key: &str) -> Result<String, MeasuredError> {
        self.render(key)
    }
}

impl Claim {
    /// Runs the check on `measured`. An error (a missing file or figure) is not a verdict: the
    /// book cannot be built from these files.
    pub fn evaluate(&self, measured: &Measured) -> Result<Outcome, MeasuredError> {
        (self.check)(&Reader {
            claim: self,
            measured,
        })
    }

    /// The measured files the claim reads (`exercise-5`).
    pub fn files(&self) -> BTreeSet<&'static str> {
        self.reads
            .iter()
            .filter_map(|key| split_key(key).ok().map(|(name, _)| name))
            .collect()
    }
}

/// The claim called `name` in `claims`.
pub fn find<'a>(claims: &'a [Claim], name: &str) -> Option<&'a Claim> {
    claims.iter().find(|c| c.name == name)
}

/// Every claim the book makes.
pub static CLAIMS: &[Claim] = &[];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::file::{Figure, MeasuredFile, MeasuredOn, Source};

    /// A claim of the tests' own: fusion alone moves a CPU step by less than 5%.
    pub(crate) static TEST_CLAIMS: &[Claim] = &[Claim {
        name: "fusion-alone-moves-nothing",
        reads: &["exercise-5.stock.step_ms", "exercise-5.fused.step_ms"],
        holds_when: "exercise-5.fused.step_ms / exercise-5.stock.step_ms within 0.95..1.05",
        check: |r| {
            let stock = r.number("exercise-5.stock.step_ms")?;
            let fused = r.number("exercise-5.fused.step_ms")?;
            let ratio = fused / stock;
            Ok(Outcome::holds_if((0.95..=1.05).contains(&ratio), || {
                format!(
                    "the fused MLP took {} a step against the stock MLP's {}: {}",
                    r.render("exercise-5.fused.step_ms").unwrap_or_default(),
                    r.render("exercise-5.stock.step_ms").unwrap_or_default(),
                    crate::render_number(ratio, "×", 2)
                )
            }))
        },
    }];

    pub(crate) fn exercise_5(stock: f64, fused: f64) -> MeasuredFile {
        let on = MeasuredOn {
            source: Source::BookMeasure,
            date: "2026-12-05".into(),
            machine: "a test machine".into(),
            device: "cpu".into(),
            kernel_path: Some("packed-avx512".into()),
            threads: Some(2),
            ceilings: None,
            command: "book-measure exercise-5".into(),
            note: None,
        };
        let mut file = MeasuredFile::new("exercise-5", on);
        file.insert("stock.step_ms", Figure::number(stock, "ms", 1));
        file.insert("fused.step_ms", Figure::number(fused, "ms", 1));
        file
    }

    #[test]
    fn a_claim_holds_or_says_what_was_measured() {
        let claim = find(TEST_CLAIMS, "fusion-alone-moves-nothing").unwrap();
        let mut measured = Measured::empty("book/measured");
        measured.insert(exercise_5(22.6, 22.7));
        assert_eq!(claim.evaluate(&measured).unwrap(), Outcome::Holds);
        measured.insert(exercise_5(22.6, 15.2));
        assert_eq!(
            claim.evaluate(&measured).unwrap(),
            Outcome::Otherwise(
                "the fused MLP took 15.2 ms a step against the stock MLP's 22.6 ms: 0.67×".into()
            )
        );
        assert_eq!(claim.files(), BTreeSet::from(["exercise-5"]));
    }

    #[test]
    fn a_claim_on_a_missing_file_is_an_error_not_a_verdict() {
        let claim = find(TEST_CLAIMS, "fusion-alone-moves-nothing").unwrap();
        let err = claim
            .evaluate(&Measured::empty("m"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("m/exercise-5.json: no such file"), "{err}");
    }

    #[test]
    fn a_claim_reading_an_undeclared_key_is_an_error() {
        static SNEAKY: Claim = Claim {
            name: "sneaky",
            reads: &[],
            holds_when: "",
            check: |r| r.number("exercise-5.stock.step_ms").map(|_| Outcome::Holds),
        };
        let mut measured = Measured::empty("m");
        measured.insert(exercise_5(1.0, 1.0));
        let err = SNEAKY.evaluate(&measured).unwrap_err().to_string();
        assert!(
            err.starts_with("claim `sneaky` reads `exercise-5.stock.step_ms`"),
            "{err}"
        );
    }

    /// Every claim of the book reads only what it declares, names valid keys, and reaches a
    /// verdict when its figures exist (filled here with 1.0 each).
    #[test]
    fn every_book_claim_is_well_formed() {
        let mut names = BTreeSet::new();
        for claim in CLAIMS {
            assert!(
                crate::is_valid_name(claim.name),
                "claim name `{}`",
                claim.name
            );
            assert!(
                names.insert(claim.name),
                "claim `{}` listed twice",
                claim.name
            );
            assert!(
                !claim.holds_when.is_empty(),
                "claim `{}` has no holds_when",
                claim.name
            );
            let mut measured = Measured::empty("m");
            for key in claim.reads {
                let (name, key) = split_key(key).unwrap();
                assert!(
                    crate::is_valid_key(key),
                    "claim `{}` reads `{key}`",
                    claim.name
                );
                let mut file = measured.file(name).cloned().unwrap_or_else(|_| {
                    let mut f = exercise_5(1.0, 1.0);
                    f.name = name.to_string();
                    f.figures.clear();
                    f
                });
                file.insert(key, Figure::number(1.0, "", 1));
                measured.insert(file);
            }
            if let Err(e) = claim.evaluate(&measured) {
                panic!("claim `{}` on its declared figures: {e}", claim.name);
            }
        }
    }
}
