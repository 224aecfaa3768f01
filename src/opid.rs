//! Operation IDs (SPEC section 1). Pure.

use std::fmt;

/// A validated operation ID: 1..=200 characters of `A-Z a-z 0-9 . _ : @ -`,
/// not starting with `.` or `-`, never containing `..`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OperationId(String);

impl OperationId {
    /// Validate; the error is a one-line reason that never echoes control
    /// characters raw (escape them).
    pub fn parse(_s: &str) -> Result<OperationId, String> {
        todo!()
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The receipt file name, `<ID>.json`.
    pub fn receipt_file(&self) -> String {
        format!("{}.json", self.0)
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
