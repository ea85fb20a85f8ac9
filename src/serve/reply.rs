//! What the API answers when it cannot: the error body, and the lookups every API route shares
//! (the session an address names, a window's failure as an answer).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::State as Shared;
use super::catalog::{ViewRow, Viewable};
use super::window::WindowError;

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// The message.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn bad(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body<'a> {
            error: &'a str,
            message: &'a str,
        }
        let body = Body {
            error: self.code,
            message: &self.message,
        };
        (self.status, Json(body)).into_response()
    }
}

/// The viewable transcript named `id`.
pub(crate) fn find(state: &Shared, id: &str) -> Result<(Viewable, ViewRow), ApiError> {
    let listing = state.catalog.listing();
    let viewable = listing.by_id.get(id).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no_session",
            format!("no session {id:?}"),
        )
    })?;
    let row = listing
        .sessions
        .get(viewable.session)
        .cloned()
        .ok_or_else(|| ApiError::internal("listing out of step"))?;
    Ok((viewable.clone(), row))
}

/// The answer for a line address of a transcript that has none (an `OpenCode` session: its
/// messages are rows of a database, addressed by their place in the session).
pub(crate) fn not_line_addressable(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "not_line_addressable",
        format!(
            "{id:?} is an OpenCode session: its messages are addressed by their place, not by byte offsets"
        ),
    )
}

/// The error of a window read, as the API answers it.
pub(crate) fn window_error(e: WindowError) -> ApiError {
    match e {
        WindowError::Io(e) => ApiError::internal(e.to_string()),
        other => ApiError::bad(other.to_string()),
    }
}
