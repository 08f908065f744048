//! `course id [NAME]`: the learner id the per-learner variants are drawn from (crate::learner).

use crate::commands::Course;
use anyhow::{bail, Result};
use course_model::learner_id::{check_learner_id, read_learner_id, NO_LEARNER_ID};

/// `course id [NAME]`: show the stored id, or store a new one.
pub fn id(course: &Course, name: Option<&str>) -> Result<std::process::ExitCode> {
    let dir = course.exercises_dir();
    let stored = read_learner_id(&dir).map_err(anyhow::Error::msg);
    match name {
        None => match stored? {
            Some(id) => {
                println!("{id}");
                Ok(std::process::ExitCode::SUCCESS)
            }
            None => bail!("{NO_LEARNER_ID}"),
        },
        Some(name) => {
            let id = check_learner_id(name).map_err(anyhow::Error::msg)?;
            // A damaged file is replaced: that is what the learner asked for.
            if let Ok(Some(old)) = stored {
                if old == id {
                    println!("Your learner id is already {id:?}.");
                    return Ok(std::process::ExitCode::SUCCESS);
                }
                eprintln!(
                    "==> Changing your learner id from {old:?} to {id:?}: the per-learner questions change with it \
                     (run `course run 4` again for your new illustrative step, and answer them again)."
                );
            }
            crate::learner::store(&dir, &id)?;
            Ok(std::process::ExitCode::SUCCESS)
        }
    }
}
