//! [`Cause`]: why an index cannot be used or written, as found below the error types of the
//! indexes built on the core.

use std::fmt;

/// The error behind a [`Cause`].
pub(crate) type Source = Box<dyn std::error::Error + Send + Sync>;

/// Why an index cannot be used or written: what to tell the user, and the error behind it
/// when there is one (a panic inside redb, or a state of the files, has none).
#[derive(Debug)]
pub(crate) struct Cause {
    /// What happened, in words (the source's message when there is a source).
    pub(crate) detail: String,
    pub(crate) source: Option<Source>,
}

impl Cause {
    /// A cause that is an error.
    pub(crate) fn error(e: impl Into<Source>) -> Cause {
        let source = e.into();
        Cause {
            detail: source.to_string(),
            source: Some(source),
        }
    }

    /// A cause with no error behind it.
    pub(crate) fn described(detail: impl Into<String>) -> Cause {
        Cause {
            detail: detail.into(),
            source: None,
        }
    }

    /// The cause as an error: its source, or its description.
    pub(crate) fn into_source(self) -> Source {
        self.source.unwrap_or_else(|| self.detail.into())
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}
