//! A tool call that gave no answer, as every tool and the source scope report it.

use serde_json::Value;

use crate::search::SearchError;

/// A tool call that gave no answer: a stable code and a message, as the CLI's JSON error
/// object (`{"error": code, "message": ...}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    /// A stable code (`invalid_arguments`, `outside_sources`, `invalid_query`, ...).
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

impl ToolError {
    pub(crate) fn bad(code: &'static str, message: impl Into<String>) -> ToolError {
        ToolError {
            code,
            message: message.into(),
        }
    }

    /// The error as the JSON object a tool answers with.
    pub fn to_json(&self) -> Value {
        serde_json::json!({"error": self.code, "message": self.message})
    }
}

impl From<SearchError> for ToolError {
    fn from(error: SearchError) -> ToolError {
        ToolError::bad(error.code(), error.to_string())
    }
}
