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

impl Reader<'_> {
    /// The measured file `name`, for its `measured_on` (the device it ran on); the claim must read
    /// a key of it.
    pub fn file(&self, name: &str) -> Result<&crate::MeasuredFile, MeasuredError> {
        if !self.claim.files().contains(name) {
            return Err(MeasuredError::Undeclared {
                claim: self.claim.name.to_string(),
                key: format!("{name}.*"),
            });
        }
        self.measured.file(name)
    }

    /// "KEY = FIGURE" for a message, e.g. `gelu.reading = slow kernel`.
    fn said(&self, key: &str) -> Result<String, MeasuredError> {
        Ok(format!("{} = {}", short(key), self.render(key)?))
    }

    /// The figures `keys` said one after the other (`gelu.reading = memory-bound,
    /// gelu.roofline_pct = 31.0%`).
    fn list(&self, keys: &[&str]) -> Result<String, MeasuredError> {
        Ok(keys
            .iter()
            .map(|k| self.said(k))
            .collect::<Result<Vec<_>, _>>()?
            .join(", "))
    }
}

/// `exercise-3.gelu.roofline_pct` → `gelu.roofline_pct` (the file is named by the footer).
fn short(key: &str) -> &str {
    key.split_once('.').map_or(key, |(_, k)| k)
}

/// Every claim the book makes, as listed in book/measured/wanted/*.tsv (`claim:NAME`).
pub static CLAIMS: &[Claim] = &[
    // benchmarking-properly.md
    Claim {
        name: "aa-bootstrap-fails-near-knee",
        reads: &[
            "aa.knee.bootstrap.coverage_pct",
            "aa.knee.bootstrap.differs_pct",
            "aa.knee.replicates.coverage_pct",
            "aa.knee.replicates.differs_pct",
        ],
        holds_when: "aa.knee.bootstrap.coverage_pct < 80 and aa.knee.bootstrap.differs_pct > 10 \
                     and aa.knee.replicates.coverage_pct within 92..98 and \
                     aa.knee.replicates.differs_pct <= 1",
        check: |r| {
            let holds = r.number("aa.knee.bootstrap.coverage_pct")? < 80.0
                && r.number("aa.knee.bootstrap.differs_pct")? > 10.0
                && (92.0..=98.0).contains(&r.number("aa.knee.replicates.coverage_pct")?)
                && r.number("aa.knee.replicates.differs_pct")? <= 1.0;
            Ok(Outcome::holds_if(holds, || {
                format!(
                    "near the knee the per-request bootstrap held the true P90 in {} of runs and \
                     called {} of A/A pairs different; intervals over replicates held it in {} \
                     and called {} different",
                    r.render("aa.knee.bootstrap.coverage_pct")
                        .unwrap_or_default(),
                    r.render("aa.knee.bootstrap.differs_pct")
                        .unwrap_or_default(),
                    r.render("aa.knee.replicates.coverage_pct")
                        .unwrap_or_default(),
                    r.render("aa.knee.replicates.differs_pct")
                        .unwrap_or_default(),
                )
            }))
        },
    },
    Claim {
        name: "queue-dominates-past-knee",
        reads: &[
            "serving.rate_8.queue.p90_ms",
            "serving.rate_8.ttft.p90_ms",
            "serving.rate_8.prefill.p90_ms",
            "serving.rate_8.req_s",
        ],
        holds_when: "serving.rate_8.queue.p90_ms >= 0.5 * serving.rate_8.ttft.p90_ms and \
                     serving.rate_8.queue.p90_ms > 2 * serving.rate_8.prefill.p90_ms and \
                     serving.rate_8.req_s < 0.9 * 8",
        check: |r| {
            let queue = r.number("serving.rate_8.queue.p90_ms")?;
            let holds = queue >= 0.5 * r.number("serving.rate_8.ttft.p90_ms")?
                && queue > 2.0 * r.number("serving.rate_8.prefill.p90_ms")?
                && r.number("serving.rate_8.req_s")? < 0.9 * 8.0;
            let message = r.list(&[
                "serving.rate_8.queue.p90_ms",
                "serving.rate_8.ttft.p90_ms",
                "serving.rate_8.prefill.p90_ms",
                "serving.rate_8.req_s",
            ])?;
            Ok(Outcome::holds_if(holds, || {
                format!("at 8 req/s offered: {message}")
            }))
        },
    },
    Claim {
        name: "itl-tail-is-prefill",
        reads: &["serving.rate_4.itl.p90_ms", "serving.rate_4.itl.median_ms"],
        holds_when: "serving.rate_4.itl.p90_ms >= 2 * serving.rate_4.itl.median_ms",
        check: |r| {
            let p90 = r.number("serving.rate_4.itl.p90_ms")?;
            let median = r.number("serving.rate_4.itl.median_ms")?;
            let message = r.list(&["serving.rate_4.itl.median_ms", "serving.rate_4.itl.p90_ms"])?;
            Ok(Outcome::holds_if(p90 >= 2.0 * median, || {
                format!(
                    "at 4 req/s offered: {message} ({} the median)",
                    crate::render_number(p90 / median, "×", 2)
                )
            }))
        },
    },
    // exercise-2.md
    Claim {
        name: "batch-16-saturates-little-higher",
        reads: &[
            "exercise-2.batch_16.saturation_rps",
            "exercise-2.batch_8.saturation_rps",
        ],
        holds_when: "exercise-2.batch_16.saturation_rps / exercise-2.batch_8.saturation_rps \
                     < 1.25",
        check: |r| {
            let b16 = r.number("exercise-2.batch_16.saturation_rps")?;
            let b8 = r.number("exercise-2.batch_8.saturation_rps")?;
            let message = r.list(&[
                "exercise-2.batch_8.saturation_rps",
                "exercise-2.batch_16.saturation_rps",
            ])?;
            Ok(Outcome::holds_if(b16 / b8 < 1.25, || {
                format!("{message} ({})", crate::render_number(b16 / b8, "×", 2))
            }))
        },
    },
    // exercise-3.md and profile-as-budget.md
    Claim {
        name: "gelu-slow-kernel-on-cpu",
        reads: &["exercise-3.gelu.reading", "exercise-3.gelu.roofline_pct"],
        holds_when: "exercise-3.gelu.reading == \"slow kernel\" and \
                     exercise-3.gelu.roofline_pct < 25",
        check: |r| {
            let holds = r.text("exercise-3.gelu.reading")? == "slow kernel"
                && r.number("exercise-3.gelu.roofline_pct")? < 25.0;
            let message = r.list(&["exercise-3.gelu.reading", "exercise-3.gelu.roofline_pct"])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    Claim {
        name: "gelu-slow-kernel",
        reads: &["exercise-3.gelu.reading"],
        holds_when: "exercise-3.gelu.reading == \"slow kernel\"",
        check: |r| {
            let message = r.list(&["exercise-3.gelu.reading"])?;
            Ok(Outcome::holds_if(
                r.text("exercise-3.gelu.reading")? == "slow kernel",
                || message,
            ))
        },
    },
    Claim {
        name: "lm-head-one-position-saves-little",
        reads: &["exercise-3.lm_head.memory_roofline_pct"],
        holds_when: "exercise-3.lm_head.memory_roofline_pct >= 50",
        check: |r| {
            let pct = r.number("exercise-3.lm_head.memory_roofline_pct")?;
            let message = r.list(&["exercise-3.lm_head.memory_roofline_pct"])?;
            Ok(Outcome::holds_if(pct >= 50.0, || message))
        },
    },
    Claim {
        name: "exercise-3-top-three",
        reads: &[
            "exercise-3.matmul.rank",
            "exercise-3.lm_head.rank",
            "exercise-3.gelu.rank",
            "exercise-3.matmul.share",
            "exercise-3.lm_head.share",
            "exercise-3.gelu.share",
        ],
        holds_when: "exercise-3.matmul.share > exercise-3.lm_head.share > exercise-3.gelu.share \
                     > every other row's self share (ranks 1, 2, 3)",
        check: |r| {
            let holds = r.number("exercise-3.matmul.rank")? == 1.0
                && r.number("exercise-3.lm_head.rank")? == 2.0
                && r.number("exercise-3.gelu.rank")? == 3.0;
            let message = r.list(&[
                "exercise-3.matmul.rank",
                "exercise-3.matmul.share",
                "exercise-3.lm_head.rank",
                "exercise-3.lm_head.share",
                "exercise-3.gelu.rank",
                "exercise-3.gelu.share",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    Claim {
        name: "matmuls-memory-bound",
        reads: &[
            "exercise-3.matmul.reading",
            "exercise-3.lm_head.reading",
            "exercise-3.matmul.share",
            "exercise-3.lm_head.share",
        ],
        holds_when: "exercise-3.matmul.reading == \"memory-bound\" and \
                     exercise-3.lm_head.reading == \"memory-bound\" and \
                     exercise-3.matmul.share + exercise-3.lm_head.share > 50",
        check: |r| {
            let holds = r.text("exercise-3.matmul.reading")? == "memory-bound"
                && r.text("exercise-3.lm_head.reading")? == "memory-bound"
                && r.number("exercise-3.matmul.share")? + r.number("exercise-3.lm_head.share")?
                    > 50.0;
            let message = r.list(&[
                "exercise-3.matmul.reading",
                "exercise-3.matmul.share",
                "exercise-3.lm_head.reading",
                "exercise-3.lm_head.share",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    Claim {
        name: "bias-add-outruns-gelu",
        reads: &["exercise-3.bias_add.gb_s", "exercise-3.gelu.gb_s"],
        holds_when: "exercise-3.bias_add.gb_s >= 10 * exercise-3.gelu.gb_s",
        check: |r| {
            let bias = r.number("exercise-3.bias_add.gb_s")?;
            let gelu = r.number("exercise-3.gelu.gb_s")?;
            let message = r.list(&["exercise-3.bias_add.gb_s", "exercise-3.gelu.gb_s"])?;
            Ok(Outcome::holds_if(bias >= 10.0 * gelu, || {
                format!("{message} ({})", crate::render_number(bias / gelu, "×", 1))
            }))
        },
    },
    // exercise-4.md
    Claim {
        name: "first-attempt-matches-below-ridge",
        reads: &[
            "exercise-4.half_shares_pct",
            "exercise-4.predicted_cut_pct",
            "exercise-4.f32.matmul.flop_per_byte",
            "exercise-4.f32.lm_head.flop_per_byte",
            "exercise-4.f32.ridge_flop_per_byte",
        ],
        holds_when: "2 × exercise-4.f32.matmul.flop_per_byte and 2 × \
                     exercise-4.f32.lm_head.flop_per_byte < exercise-4.f32.ridge_flop_per_byte, \
                     and exercise-4.half_shares_pct within 0.5 of exercise-4.predicted_cut_pct",
        check: |r| {
            let ridge = r.number("exercise-4.f32.ridge_flop_per_byte")?;
            let below = 2.0 * r.number("exercise-4.f32.matmul.flop_per_byte")? < ridge
                && 2.0 * r.number("exercise-4.f32.lm_head.flop_per_byte")? < ridge;
            let equal = (r.number("exercise-4.half_shares_pct")?
                - r.number("exercise-4.predicted_cut_pct")?)
            .abs()
                <= 0.5;
            let message = r.list(&[
                "exercise-4.f32.matmul.flop_per_byte",
                "exercise-4.f32.lm_head.flop_per_byte",
                "exercise-4.f32.ridge_flop_per_byte",
                "exercise-4.half_shares_pct",
                "exercise-4.predicted_cut_pct",
            ])?;
            Ok(Outcome::holds_if(below && equal, || message))
        },
    },
    Claim {
        name: "bf16-peak-sets-the-cut",
        reads: &[
            "exercise-4.measured_cut_pct",
            "exercise-4.predicted_cut_pct",
            "exercise-4.bf16.peak_gflop_s",
            "exercise-4.f32.peak_gflop_s",
            "exercise-4.bf16.ridge_flop_per_byte",
            "exercise-4.bf16.matmul.flop_per_byte",
            "exercise-4.bf16.lm_head.flop_per_byte",
        ],
        holds_when: "exercise-4.measured_cut_pct < exercise-4.predicted_cut_pct, \
                     exercise-4.bf16.peak_gflop_s < exercise-4.f32.peak_gflop_s, and both bf16 \
                     rows' FLOP/B within 15% of the bf16 ridge (close to it: the reading on \
                     either side of it is a toss-up between runs)",
        check: |r| {
            let ridge = r.number("exercise-4.bf16.ridge_flop_per_byte")?;
            let near = |row: &str| -> Result<bool, MeasuredError> {
                let intensity = r.number(&format!("exercise-4.bf16.{row}.flop_per_byte"))?;
                Ok((intensity / ridge - 1.0).abs() <= 0.15)
            };
            let holds = r.number("exercise-4.measured_cut_pct")?
                < r.number("exercise-4.predicted_cut_pct")?
                && r.number("exercise-4.bf16.peak_gflop_s")?
                    < r.number("exercise-4.f32.peak_gflop_s")?
                && near("matmul")?
                && near("lm_head")?;
            let message = r.list(&[
                "exercise-4.measured_cut_pct",
                "exercise-4.predicted_cut_pct",
                "exercise-4.bf16.peak_gflop_s",
                "exercise-4.f32.peak_gflop_s",
                "exercise-4.bf16.ridge_flop_per_byte",
                "exercise-4.bf16.matmul.flop_per_byte",
                "exercise-4.bf16.lm_head.flop_per_byte",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    Claim {
        name: "quantized-rows-reach-less-of-the-peak",
        reads: &[
            "exercise-4.q8_0.measured_cut_pct",
            "exercise-4.q8_0.predicted_cut_pct",
            "exercise-4.q8_0.matmul.reading",
            "exercise-4.q8_0.lm_head.reading",
            "exercise-4.q8_0.matmul.roofline_pct",
            "exercise-4.q8_0.lm_head.roofline_pct",
            "exercise-4.f32.matmul.roofline_pct",
            "exercise-4.f32.lm_head.roofline_pct",
        ],
        holds_when: "exercise-4.q8_0.measured_cut_pct < exercise-4.q8_0.predicted_cut_pct, both \
                     q8_0 rows read compute-bound, and each q8_0 row's roofline_pct is below the \
                     f32 row's",
        check: |r| {
            let mut holds = r.number("exercise-4.q8_0.measured_cut_pct")?
                < r.number("exercise-4.q8_0.predicted_cut_pct")?;
            for row in ["matmul", "lm_head"] {
                holds = holds
                    && r.text(&format!("exercise-4.q8_0.{row}.reading"))? == "compute-bound"
                    && r.number(&format!("exercise-4.q8_0.{row}.roofline_pct"))?
                        < r.number(&format!("exercise-4.f32.{row}.roofline_pct"))?;
            }
            let message = r.list(&[
                "exercise-4.q8_0.measured_cut_pct",
                "exercise-4.q8_0.predicted_cut_pct",
                "exercise-4.q8_0.matmul.reading",
                "exercise-4.q8_0.lm_head.reading",
                "exercise-4.q8_0.matmul.roofline_pct",
                "exercise-4.f32.matmul.roofline_pct",
                "exercise-4.q8_0.lm_head.roofline_pct",
                "exercise-4.f32.lm_head.roofline_pct",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    // fused-kernel-story.md and exercise-5.md
    Claim {
        name: "fusion-alone-flat-on-cpu",
        reads: &[
            "exercise-5.stage1.fused.share",
            "exercise-5.unfused.gelu.share",
        ],
        holds_when: "on a CPU run, exercise-5.stage1.fused.share / exercise-5.unfused.gelu.share \
                     within 0.8..1.25 (a CUDA run does not apply)",
        check: |r| {
            if r.file("exercise-5")?.measured_on.device != "cpu" {
                return Ok(Outcome::Holds);
            }
            let fused = r.number("exercise-5.stage1.fused.share")?;
            let gelu = r.number("exercise-5.unfused.gelu.share")?;
            let message = r.list(&[
                "exercise-5.unfused.gelu.share",
                "exercise-5.stage1.fused.share",
            ])?;
            Ok(Outcome::holds_if(
                (0.8..=1.25).contains(&(fused / gelu)),
                || format!("{message} ({})", crate::render_number(fused / gelu, "×", 2)),
            ))
        },
    },
    Claim {
        name: "cpu-fusion-alone-moves-nothing",
        reads: &[
            "exercise-5.unfused.activation.reading",
            "exercise-5.stage1.activation.reading",
            "exercise-5.unfused.activation.ms",
            "exercise-5.stage1.activation.ms",
        ],
        holds_when: "on a CPU run, exercise-5.unfused.activation.reading == \
                     exercise-5.stage1.activation.reading == \"slow kernel\" and \
                     exercise-5.stage1.activation.ms / exercise-5.unfused.activation.ms within \
                     0.8..1.25 (a CUDA run does not apply)",
        check: |r| {
            if r.file("exercise-5")?.measured_on.device != "cpu" {
                return Ok(Outcome::Holds);
            }
            let unfused = r.number("exercise-5.unfused.activation.ms")?;
            let stage1 = r.number("exercise-5.stage1.activation.ms")?;
            let holds = r.text("exercise-5.unfused.activation.reading")? == "slow kernel"
                && r.text("exercise-5.stage1.activation.reading")? == "slow kernel"
                && (0.8..=1.25).contains(&(stage1 / unfused));
            let message = r.list(&[
                "exercise-5.unfused.activation.reading",
                "exercise-5.unfused.activation.ms",
                "exercise-5.stage1.activation.reading",
                "exercise-5.stage1.activation.ms",
            ])?;
            Ok(Outcome::holds_if(holds, || {
                format!(
                    "{message} ({})",
                    crate::render_number(stage1 / unfused, "×", 2)
                )
            }))
        },
    },
    Claim {
        name: "cpu-kernel-fix-moves-the-row",
        reads: &[
            "exercise-5.unfused.activation.reading",
            "exercise-5.unfused.activation.roofline_pct",
            "exercise-5.stage2.activation.roofline_pct",
            "exercise-5.unfused.activation.share",
            "exercise-5.stage2.activation.share",
        ],
        holds_when: "on a CPU run, exercise-5.unfused.activation.reading == \"slow kernel\" and \
                     exercise-5.stage2.activation.roofline_pct >= 3 × \
                     exercise-5.unfused.activation.roofline_pct and \
                     exercise-5.stage2.activation.share < exercise-5.unfused.activation.share \
                     (a CUDA run does not apply)",
        check: |r| {
            if r.file("exercise-5")?.measured_on.device != "cpu" {
                return Ok(Outcome::Holds);
            }
            let holds = r.text("exercise-5.unfused.activation.reading")? == "slow kernel"
                && r.number("exercise-5.stage2.activation.roofline_pct")?
                    >= 3.0 * r.number("exercise-5.unfused.activation.roofline_pct")?
                && r.number("exercise-5.stage2.activation.share")?
                    < r.number("exercise-5.unfused.activation.share")?;
            let message = r.list(&[
                "exercise-5.unfused.activation.reading",
                "exercise-5.unfused.activation.share",
                "exercise-5.unfused.activation.roofline_pct",
                "exercise-5.stage2.activation.share",
                "exercise-5.stage2.activation.roofline_pct",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    Claim {
        name: "fused-cut-within-the-ceiling",
        reads: &[
            "exercise-5.bench.time_cut_pct",
            "exercise-5.prefill.replaced.share",
        ],
        holds_when: "exercise-5.bench.time_cut_pct <= exercise-5.prefill.replaced.share",
        check: |r| {
            let holds = r.number("exercise-5.bench.time_cut_pct")?
                <= r.number("exercise-5.prefill.replaced.share")?;
            let message = r.list(&[
                "exercise-5.bench.time_cut_pct",
                "exercise-5.prefill.replaced.share",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    // exercise-8.md
    Claim {
        name: "smollm2-dense-layers-lead",
        reads: &[
            "exercise-8.matmul.rank",
            "exercise-8.lm_head.rank",
            "exercise-8.matmul.reading",
            "exercise-8.lm_head.reading",
        ],
        holds_when: "matmul and lm_head are the two largest self shares of the exercise-8 run \
                     (ranks 1 and 2, either order) and both read memory-bound",
        check: |r| {
            let ranks = [
                r.number("exercise-8.matmul.rank")?,
                r.number("exercise-8.lm_head.rank")?,
            ];
            let holds = (ranks == [1.0, 2.0] || ranks == [2.0, 1.0])
                && r.text("exercise-8.matmul.reading")? == "memory-bound"
                && r.text("exercise-8.lm_head.reading")? == "memory-bound";
            let message = r.list(&[
                "exercise-8.matmul.rank",
                "exercise-8.matmul.reading",
                "exercise-8.lm_head.rank",
                "exercise-8.lm_head.reading",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    // profile-as-budget.md and tool-tiers.md: the recorded H200 run
    Claim {
        name: "h200-elementwise-launch-overhead",
        reads: &[
            "h200.gelu.reading",
            "h200.bias_add.reading",
            "h200.layer_norm.reading",
            "h200.gelu.roofline_pct",
        ],
        holds_when: "h200.gelu.reading == h200.bias_add.reading == h200.layer_norm.reading == \
                     \"launch overhead\" and h200.gelu.roofline_pct <= 5",
        check: |r| {
            let mut holds = r.number("h200.gelu.roofline_pct")? <= 5.0;
            for key in [
                "h200.gelu.reading",
                "h200.bias_add.reading",
                "h200.layer_norm.reading",
            ] {
                holds &= r.text(key)? == "launch overhead";
            }
            let message = r.list(&[
                "h200.gelu.reading",
                "h200.bias_add.reading",
                "h200.layer_norm.reading",
                "h200.gelu.roofline_pct",
            ])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
    Claim {
        name: "ncu-fused-kernel-mostly-startup",
        reads: &["h200.ncu.duration_us", "h200.ncu.memory_throughput_pct"],
        holds_when: "h200.ncu.duration_us >= 1.0 and h200.ncu.memory_throughput_pct < 25",
        check: |r| {
            let holds = r.number("h200.ncu.duration_us")? >= 1.0
                && r.number("h200.ncu.memory_throughput_pct")? < 25.0;
            let message = r.list(&["h200.ncu.duration_us", "h200.ncu.memory_throughput_pct"])?;
            Ok(Outcome::holds_if(holds, || message))
        },
    },
];

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

    /// A measured set from `(NAME.KEY, figure)` pairs; numbers get one decimal and unit "".
    fn set(figures: &[(&str, F)]) -> Measured {
        let mut measured = Measured::empty("m");
        for (full, figure) in figures {
            let (name, key) = split_key(full).unwrap();
            let mut file = measured.file(name).cloned().unwrap_or_else(|_| {
                let mut f = exercise_5(1.0, 1.0);
                f.name = name.to_string();
                f.figures.clear();
                f
            });
            file.insert(
                key,
                match figure {
                    F::N(v) => Figure::number(*v, "", 1),
                    F::T(t) => Figure::text(*t),
                },
            );
            measured.insert(file);
        }
        measured
    }

    /// A claim, figures on which it holds, one figure changed, and the message it then gives.
    type Case = (
        &'static str,
        Vec<(&'static str, F)>,
        (&'static str, F),
        &'static str,
    );

    enum F {
        N(f64),
        T(&'static str),
    }
    use F::{N, T};

    /// Each book claim: figures like the reference run's (it holds), then one figure changed the
    /// way a different machine could (it fails, saying what was measured).
    #[test]
    fn each_book_claim_holds_and_fails_as_its_condition_says() {
        let cases: Vec<Case> =
            vec![
            (
                "aa-bootstrap-fails-near-knee",
                vec![
                    ("aa.knee.bootstrap.coverage_pct", N(22.3)),
                    ("aa.knee.bootstrap.differs_pct", N(56.8)),
                    ("aa.knee.replicates.coverage_pct", N(95.8)),
                    ("aa.knee.replicates.differs_pct", N(0.1)),
                ],
                ("aa.knee.replicates.coverage_pct", N(90.0)),
                "near the knee the per-request bootstrap held the true P90 in 22.3 of runs and \
                 called 56.8 of A/A pairs different; intervals over replicates held it in 90.0 \
                 and called 0.1 different",
            ),
            (
                "queue-dominates-past-knee",
                vec![
                    ("serving.rate_8.queue.p90_ms", N(2000.0)),
                    ("serving.rate_8.ttft.p90_ms", N(2400.0)),
                    ("serving.rate_8.prefill.p90_ms", N(435.0)),
                    ("serving.rate_8.req_s", N(3.7)),
                ],
                ("serving.rate_8.req_s", N(7.9)),
                "at 8 req/s offered: rate_8.queue.p90_ms = 2000.0, rate_8.ttft.p90_ms = 2400.0, \
                 rate_8.prefill.p90_ms = 435.0, rate_8.req_s = 7.9",
            ),
            (
                "itl-tail-is-prefill",
                vec![
                    ("serving.rate_4.itl.p90_ms", N(156.0)),
                    ("serving.rate_4.itl.median_ms", N(27.0)),
                ],
                ("serving.rate_4.itl.p90_ms", N(30.0)),
                "at 4 req/s offered: rate_4.itl.median_ms = 27.0, rate_4.itl.p90_ms = 30.0 \
                 (1.11× the median)",
            ),
            (
                "batch-16-saturates-little-higher",
                vec![
                    ("exercise-2.batch_16.saturation_rps", N(3.98)),
                    ("exercise-2.batch_8.saturation_rps", N(3.70)),
                ],
                ("exercise-2.batch_16.saturation_rps", N(6.0)),
                "batch_8.saturation_rps = 3.7, batch_16.saturation_rps = 6.0 (1.62×)",
            ),
            (
                "gelu-slow-kernel-on-cpu",
                vec![
                    ("exercise-3.gelu.reading", T("slow kernel")),
                    ("exercise-3.gelu.roofline_pct", N(1.5)),
                ],
                ("exercise-3.gelu.reading", T("memory-bound")),
                "gelu.reading = memory-bound, gelu.roofline_pct = 1.5",
            ),
            (
                "gelu-slow-kernel",
                vec![("exercise-3.gelu.reading", T("slow kernel"))],
                ("exercise-3.gelu.reading", T("launch overhead")),
                "gelu.reading = launch overhead",
            ),
            (
                "lm-head-one-position-saves-little",
                vec![("exercise-3.lm_head.memory_roofline_pct", N(90.0))],
                ("exercise-3.lm_head.memory_roofline_pct", N(30.0)),
                "lm_head.memory_roofline_pct = 30.0",
            ),
            (
                "exercise-3-top-three",
                vec![
                    ("exercise-3.matmul.rank", N(1.0)),
                    ("exercise-3.lm_head.rank", N(2.0)),
                    ("exercise-3.gelu.rank", N(3.0)),
                    ("exercise-3.matmul.share", N(57.2)),
                    ("exercise-3.lm_head.share", N(21.0)),
                    ("exercise-3.gelu.share", N(17.2)),
                ],
                ("exercise-3.gelu.rank", N(4.0)),
                "matmul.rank = 1.0, matmul.share = 57.2, lm_head.rank = 2.0, lm_head.share = \
                 21.0, gelu.rank = 4.0, gelu.share = 17.2",
            ),
            (
                "matmuls-memory-bound",
                vec![
                    ("exercise-3.matmul.reading", T("memory-bound")),
                    ("exercise-3.lm_head.reading", T("memory-bound")),
                    ("exercise-3.matmul.share", N(57.2)),
                    ("exercise-3.lm_head.share", N(21.0)),
                ],
                ("exercise-3.matmul.reading", T("compute-bound")),
                "matmul.reading = compute-bound, matmul.share = 57.2, lm_head.reading = \
                 memory-bound, lm_head.share = 21.0",
            ),
            (
                "bias-add-outruns-gelu",
                vec![("exercise-3.bias_add.gb_s", N(38.0)), ("exercise-3.gelu.gb_s", N(0.35))],
                ("exercise-3.bias_add.gb_s", N(2.0)),
                "bias_add.gb_s = 2.0, gelu.gb_s = 0.3 (5.7×)",
            ),
            (
                "first-attempt-matches-below-ridge",
                vec![
                    ("exercise-4.half_shares_pct", N(40.2)),
                    ("exercise-4.predicted_cut_pct", N(40.2)),
                    ("exercise-4.f32.matmul.flop_per_byte", N(3.95)),
                    ("exercise-4.f32.lm_head.flop_per_byte", N(3.96)),
                    ("exercise-4.f32.ridge_flop_per_byte", N(11.2)),
                ],
                ("exercise-4.f32.ridge_flop_per_byte", N(6.0)),
                "f32.matmul.flop_per_byte = 4.0, f32.lm_head.flop_per_byte = 4.0, \
                 f32.ridge_flop_per_byte = 6.0, half_shares_pct = 40.2, predicted_cut_pct = 40.2",
            ),
            (
                "bf16-peak-sets-the-cut",
                vec![
                    ("exercise-4.measured_cut_pct", N(25.5)),
                    ("exercise-4.predicted_cut_pct", N(40.2)),
                    ("exercise-4.bf16.peak_gflop_s", N(207.0)),
                    ("exercise-4.f32.peak_gflop_s", N(331.0)),
                    ("exercise-4.bf16.ridge_flop_per_byte", N(8.05)),
                    ("exercise-4.bf16.matmul.flop_per_byte", N(7.78)),
                    ("exercise-4.bf16.lm_head.flop_per_byte", N(7.83)),
                ],
                ("exercise-4.bf16.ridge_flop_per_byte", N(4.0)),
                "measured_cut_pct = 25.5, predicted_cut_pct = 40.2, bf16.peak_gflop_s = 207.0, \
                 f32.peak_gflop_s = 331.0, bf16.ridge_flop_per_byte = 4.0, \
                 bf16.matmul.flop_per_byte = 7.8, bf16.lm_head.flop_per_byte = 7.8",
            ),
            (
                "quantized-rows-reach-less-of-the-peak",
                vec![
                    ("exercise-4.q8_0.measured_cut_pct", N(43.4)),
                    ("exercise-4.q8_0.predicted_cut_pct", N(53.0)),
                    ("exercise-4.q8_0.matmul.reading", T("compute-bound")),
                    ("exercise-4.q8_0.lm_head.reading", T("compute-bound")),
                    ("exercise-4.q8_0.matmul.roofline_pct", N(43.6)),
                    ("exercise-4.q8_0.lm_head.roofline_pct", N(58.1)),
                    ("exercise-4.f32.matmul.roofline_pct", N(52.7)),
                    ("exercise-4.f32.lm_head.roofline_pct", N(73.0)),
                ],
                ("exercise-4.q8_0.lm_head.roofline_pct", N(80.0)),
                "q8_0.measured_cut_pct = 43.4, q8_0.predicted_cut_pct = 53.0, \
                 q8_0.matmul.reading = compute-bound, q8_0.lm_head.reading = compute-bound, \
                 q8_0.matmul.roofline_pct = 43.6, f32.matmul.roofline_pct = 52.7, \
                 q8_0.lm_head.roofline_pct = 80.0, f32.lm_head.roofline_pct = 73.0",
            ),
            (
                "fusion-alone-flat-on-cpu",
                vec![
                    ("exercise-5.stage1.fused.share", N(17.0)),
                    ("exercise-5.unfused.gelu.share", N(15.7)),
                ],
                ("exercise-5.stage1.fused.share", N(4.0)),
                "unfused.gelu.share = 15.7, stage1.fused.share = 4.0 (0.25×)",
            ),
            (
                "h200-elementwise-launch-overhead",
                vec![
                    ("h200.gelu.reading", T("launch overhead")),
                    ("h200.bias_add.reading", T("launch overhead")),
                    ("h200.layer_norm.reading", T("launch overhead")),
                    ("h200.gelu.roofline_pct", N(1.2)),
                ],
                ("h200.layer_norm.reading", T("memory-bound")),
                "gelu.reading = launch overhead, bias_add.reading = launch overhead, \
                 layer_norm.reading = memory-bound, gelu.roofline_pct = 1.2",
            ),
            (
                "ncu-fused-kernel-mostly-startup",
                vec![
                    ("h200.ncu.duration_us", N(2.6)),
                    ("h200.ncu.memory_throughput_pct", N(12.0)),
                ],
                ("h200.ncu.memory_throughput_pct", N(60.0)),
                "ncu.duration_us = 2.6, ncu.memory_throughput_pct = 60.0",
            ),
            (
                "cpu-fusion-alone-moves-nothing",
                vec![
                    ("exercise-5.unfused.activation.reading", T("slow kernel")),
                    ("exercise-5.stage1.activation.reading", T("slow kernel")),
                    ("exercise-5.unfused.activation.ms", N(3.2)),
                    ("exercise-5.stage1.activation.ms", N(3.4)),
                ],
                ("exercise-5.stage1.activation.ms", N(1.0)),
                "unfused.activation.reading = slow kernel, unfused.activation.ms = 3.2, \
                 stage1.activation.reading = slow kernel, stage1.activation.ms = 1.0 (0.31×)",
            ),
            (
                "cpu-kernel-fix-moves-the-row",
                vec![
                    ("exercise-5.unfused.activation.reading", T("slow kernel")),
                    ("exercise-5.unfused.activation.roofline_pct", N(1.5)),
                    ("exercise-5.stage2.activation.roofline_pct", N(14.2)),
                    ("exercise-5.unfused.activation.share", N(15.7)),
                    ("exercise-5.stage2.activation.share", N(2.1)),
                ],
                ("exercise-5.stage2.activation.roofline_pct", N(3.0)),
                "unfused.activation.reading = slow kernel, unfused.activation.share = 15.7, \
                 unfused.activation.roofline_pct = 1.5, stage2.activation.share = 2.1, \
                 stage2.activation.roofline_pct = 3.0",
            ),
            (
                "fused-cut-within-the-ceiling",
                vec![
                    ("exercise-5.bench.time_cut_pct", N(12.0)),
                    ("exercise-5.prefill.replaced.share", N(16.0)),
                ],
                ("exercise-5.bench.time_cut_pct", N(32.8)),
                "bench.time_cut_pct = 32.8, prefill.replaced.share = 16.0",
            ),
            (
                "smollm2-dense-layers-lead",
                vec![
                    ("exercise-8.matmul.rank", N(1.0)),
                    ("exercise-8.lm_head.rank", N(2.0)),
                    ("exercise-8.matmul.reading", T("memory-bound")),
                    ("exercise-8.lm_head.reading", T("memory-bound")),
                ],
                ("exercise-8.lm_head.rank", N(3.0)),
                "matmul.rank = 1.0, matmul.reading = memory-bound, lm_head.rank = 3.0, \
                 lm_head.reading = memory-bound",
            ),
        ];
        let tested: BTreeSet<_> = cases.iter().map(|c| c.0).collect();
        let all: BTreeSet<_> = CLAIMS.iter().map(|c| c.name).collect();
        assert_eq!(tested, all, "every claim has a case here");
        for (name, holding, (key, changed), otherwise) in cases {
            let claim = find(CLAIMS, name).unwrap();
            let mut measured = set(&holding);
            assert_eq!(claim.evaluate(&measured).unwrap(), Outcome::Holds, "{name}");
            let changed = set(&[(key, changed)])
                .file(split_key(key).unwrap().0)
                .unwrap()
                .clone();
            let mut file = measured.file(&changed.name).unwrap().clone();
            file.figures.extend(changed.figures);
            measured.insert(file);
            assert_eq!(
                claim.evaluate(&measured).unwrap(),
                Outcome::Otherwise(otherwise.to_string()),
                "{name}"
            );
        }
    }

    #[test]
    fn fusion_alone_does_not_apply_to_a_cuda_run() {
        let claim = find(CLAIMS, "fusion-alone-flat-on-cpu").unwrap();
        let mut measured = set(&[
            ("exercise-5.stage1.fused.share", N(4.0)),
            ("exercise-5.unfused.gelu.share", N(15.7)),
        ]);
        let mut file = measured.file("exercise-5").unwrap().clone();
        file.measured_on.device = "cuda".into();
        measured.insert(file);
        assert_eq!(claim.evaluate(&measured).unwrap(), Outcome::Holds);
    }

    /// Every `claim:NAME` the pages' wanted lists name (book/measured/wanted/*.tsv) is one here.
    #[test]
    fn every_wanted_claim_is_implemented() {
        let wanted =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/measured/wanted");
        let Ok(entries) = std::fs::read_dir(&wanted) else {
            return;
        };
        let mut missing = Vec::new();
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "tsv") {
                for line in std::fs::read_to_string(&path).unwrap().lines() {
                    if let Some(name) = line
                        .split('\t')
                        .next()
                        .and_then(|k| k.strip_prefix("claim:"))
                    {
                        if find(CLAIMS, name.trim()).is_none() {
                            missing.push(format!("{}: claim:{name}", path.display()));
                        }
                    }
                }
            }
        }
        assert!(
            missing.is_empty(),
            "claims listed but not in CLAIMS:\n{}",
            missing.join("\n")
        );
    }
}
