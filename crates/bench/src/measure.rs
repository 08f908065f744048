//! [`Run::measure`]: a run measured and shown the way a comparison's runs are (exercises 2 and
//! 7). Its own module because it uses both the run and the report that tables it, which itself
//! reads runs.

use anyhow::{bail, Context, Result};

use crate::load::{self, LoadConfig};
use crate::metrics::Slo;
use crate::run::Run;

impl Run {
    /// `replicates` replicates of `config` run on `runtime` as the run `label`; `annotate`
    /// records in it what the comparison varied; its table is printed. An error when no request
    /// completed, the table above saying why.
    pub fn measure(
        runtime: &tokio::runtime::Runtime,
        label: String,
        config: &LoadConfig,
        replicates: usize,
        slo: &Slo,
        annotate: impl FnOnce(&mut Run),
    ) -> Result<Run> {
        let outcome = runtime
            .block_on(load::run_replicates(config, replicates))
            .with_context(|| format!("{label}: the load run failed"))?;
        let mut run = Run::from_load(label, config, slo, outcome)?;
        annotate(&mut run);
        print!("{}", crate::report::table(&run));
        if run.metrics.completed == 0 {
            bail!(
                "every request of {} failed; the table above shows why",
                run.label
            );
        }
        Ok(run)
    }
}
