//! The contract: one Rust type per JSON document the binary prints and per
//! JSON file it reads or writes (SPEC sections 3 to 9). The modes build
//! these values and print them; the JSON Schemas under `embedded/schema/`
//! are generated from the same types (feature `schema`, `tests/contract.rs`).
//! A field is `required` in a schema exactly when the binary always prints it.
//!
//! Our own files and documents refuse unknown fields (`deny_unknown_fields`);
//! a field that is present but null is an `Option` without `default`, so a
//! missing key is still refused.

mod args;
mod check;
mod printed;
mod renew;
mod status;
mod views;

pub use crate::rules::files::*;
pub use crate::rules::values::*;
pub use args::*;
pub use check::*;
pub use printed::*;
pub use renew::*;
pub use status::*;
pub use views::*;

/// The command line (SPEC 1): its grammar, parsed into typed requests.
pub mod cli;
#[cfg(feature = "schema")]
pub mod schema;
/// Text fitted to the terminal: width, wrapping, commands, colour.
pub mod screen;
/// The text view of the documents: tables, escaped cells.
pub mod text;
/// The runbook and contract versions.
pub mod version;
