//! Gradebooks for learning platforms: `course grade --export canvas|moodle --roster FILE`.
//!
//! The roster maps the course's ids (the submission names, as in `gradebook.csv`) to the
//! platform's identifiers. It is a CSV file with a header; only `student` is required, and each
//! export reads the columns it needs:
//!
//! ```text
//! student,name,lms_id,sis_user_id,sis_login_id,section,email
//! alice,"Liddell, Alice",10234,S1001,aliddell,Section A,alice@example.edu
//! ```
//!
//! - **Canvas** (`gradebook-canvas.csv`): the columns of a Canvas gradebook export, `Student`,
//!   `ID`, `SIS User ID`, `SIS Login ID`, `Section` and then the assignment as `Name (id)`
//!   (`--assignment`), with the `Points Possible` row Canvas writes. `ID` is `lms_id`, Canvas's
//!   user id; a learner without one cannot be imported and is left out with a warning.
//! - **Moodle** (`gradebook-moodle.csv`): one identifier column, `Email address` (from `email`),
//!   which Moodle's CSV grade import maps to its users, then one column per exercise and the
//!   total; the import asks which grade item each column goes to.
//!
//! Scores are the gradebook's: percent of the points, after the late policy.

use crate::cohort::{Cohort, StudentResult};
use crate::question_types::number::show;
use course_model::manifest::Manifest;
use std::collections::BTreeMap;
use std::path::Path;

/// One learner's platform identifiers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RosterEntry {
    pub name: String,
    pub lms_id: String,
    pub sis_user_id: String,
    pub sis_login_id: String,
    pub section: String,
    pub email: String,
}

/// Course id → platform identifiers.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    pub entries: BTreeMap<String, RosterEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Canvas,
    Moodle,
}

impl Platform {
    pub fn file_name(self) -> &'static str {
        match self {
            Platform::Canvas => "gradebook-canvas.csv",
            Platform::Moodle => "gradebook-moodle.csv",
        }
    }
}

impl Roster {
    pub fn parse(text: &str, shown: &str) -> Result<Roster, String> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader
            .headers()
            .map_err(|e| format!("{shown}: cannot read the roster: {e}"))?
            .clone();
        let column = |name: &str| headers.iter().position(|h| h.trim() == name);
        let Some(student) = column("student") else {
            return Err(format!(
                "{shown}:1: no `student` column; the roster's header is \
                 student,name,lms_id,sis_user_id,sis_login_id,section,email (all but student optional)"
            ));
        };
        let known = [
            "student",
            "name",
            "lms_id",
            "sis_user_id",
            "sis_login_id",
            "section",
            "email",
        ];
        if let Some(unknown) = headers.iter().find(|h| !known.contains(&h.trim())) {
            return Err(format!(
                "{shown}:1: unknown column `{unknown}`; the roster's columns are {}",
                known.join(",")
            ));
        }
        let cols = known.map(column);
        let mut entries = BTreeMap::new();
        for (i, record) in reader.records().enumerate() {
            let line = i + 2;
            let record = record.map_err(|e| format!("{shown}:{line}: {e}"))?;
            let get = |c: Option<usize>| {
                c.and_then(|c| record.get(c))
                    .unwrap_or("")
                    .trim()
                    .to_string()
            };
            let id = get(Some(student));
            if id.is_empty() {
                return Err(format!("{shown}:{line}: the `student` cell is empty"));
            }
            let entry = RosterEntry {
                name: get(cols[1]),
                lms_id: get(cols[2]),
                sis_user_id: get(cols[3]),
                sis_login_id: get(cols[4]),
                section: get(cols[5]),
                email: get(cols[6]),
            };
            if entries.insert(id.clone(), entry).is_some() {
                return Err(format!(
                    "{shown}:{line}: {id} is listed twice; keep one row per student"
                ));
            }
        }
        Ok(Roster { entries })
    }

    pub fn load(path: &Path) -> Result<Roster, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the roster: {e}", path.display()))?;
        Roster::parse(&text, &path.display().to_string())
    }
}

/// The platform's import file, and the learners left out (with why).
pub fn export(
    platform: Platform,
    manifest: &Manifest,
    cohort: &Cohort,
    roster: &Roster,
    assignment: &str,
) -> Result<(String, Vec<String>), String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut left_out = Vec::new();
    let to_err = |e: csv::Error| format!("cannot write the {platform:?} gradebook: {e}");
    let mut students: Vec<&StudentResult> = cohort.students.iter().collect();
    students.sort_by(|a, b| a.student.cmp(&b.student));
    match platform {
        Platform::Canvas => {
            writer
                .write_record([
                    "Student",
                    "ID",
                    "SIS User ID",
                    "SIS Login ID",
                    "Section",
                    assignment,
                ])
                .map_err(to_err)?;
            writer
                .write_record(["    Points Possible", "", "", "", "", "100"])
                .map_err(to_err)?;
            for s in students {
                let Some(r) = roster.entries.get(&s.student) else {
                    left_out.push(format!("{}: not in the roster", s.student));
                    continue;
                };
                if r.lms_id.is_empty() {
                    left_out.push(format!(
                        "{}: no lms_id (Canvas's user id) in the roster",
                        s.student
                    ));
                    continue;
                }
                let name = if r.name.is_empty() {
                    s.student.clone()
                } else {
                    r.name.clone()
                };
                writer
                    .write_record([
                        name,
                        r.lms_id.clone(),
                        r.sis_user_id.clone(),
                        r.sis_login_id.clone(),
                        r.section.clone(),
                        show(s.final_percent()),
                    ])
                    .map_err(to_err)?;
            }
        }
        Platform::Moodle => {
            let mut header = vec!["Email address".to_string()];
            header.extend(manifest.exercises.iter().map(|e| e.folder_name()));
            header.push(assignment.to_string());
            writer.write_record(&header).map_err(to_err)?;
            for s in students {
                let Some(r) = roster.entries.get(&s.student) else {
                    left_out.push(format!("{}: not in the roster", s.student));
                    continue;
                };
                if r.email.is_empty() {
                    left_out.push(format!(
                        "{}: no email (Moodle's identifier) in the roster",
                        s.student
                    ));
                    continue;
                }
                let mut row = vec![r.email.clone()];
                row.extend(
                    manifest
                        .exercises
                        .iter()
                        .map(|e| show(s.exercise_percent(e.number))),
                );
                row.push(show(s.final_percent()));
                writer.write_record(&row).map_err(to_err)?;
            }
        }
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
    Ok((text, left_out))
}
