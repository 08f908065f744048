//! The book's measured figures.
//!
//! Every figure the book quotes from a run lives in `book/measured/NAME.json` (one experiment or
//! one recorded source, one machine, one date), never in the prose. This crate is the one
//! definition of that file, shared by its writer (`book-measure`) and its reader (the
//! `mdbook-measured` preprocessor):
//!
//! - [`MeasuredFile`]: the serde type; [`load`] and [`write`] (atomic) one file;
//! - [`Measured`]: the files of a folder, and [`Measured::lookup`] of `NAME.KEY`
//!   (`exercise-3.gelu.share`); [`Figure::render`] prints a figure as the book does (`14.2%`);
//! - [`claims`]: the named sentences whose truth depends on the machine, each a check over keys;
//! - [`markers`]: the page markup (`{{#measured NAME.KEY}}`, `{{#given TEXT}}`,
//!   `{{#claim NAME}}…{{#endclaim}}`), its rendering and the "Measured on" footer, and
//!   [`markers::check_pages`], the scan of the book's sources behind `book-measure --check`.

pub mod claims;
mod error;
mod file;
pub mod markers;
mod set;

pub use error::MeasuredError;
pub use file::{
    is_valid_key, is_valid_name, render_number, Ceilings, Figure, MeasuredFile, MeasuredOn, Source,
    FORMAT, MAX_DIGITS, UNITS,
};
pub use set::{command_for, load, write, Lookup, Measured};

/// Where the book keeps its measured files, relative to the repository root.
pub const BOOK_MEASURED_DIR: &str = "book/measured";
