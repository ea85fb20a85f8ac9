//! `/api/sessions/{id}/follow?offset=`: server-sent events following a growing transcript.
//! Each poll stats the file and reads only the bytes past the last line sent (O(new bytes));
//! complete new lines go out as a `lines` event shaped as a window of
//! `/api/sessions/{id}/lines`. A file that shrank (rewritten or truncated) gets one `reset`
//! event and the stream ends: the page reloads it.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde::Deserialize;

use super::State as Shared;
use super::reply::{ApiError, find, not_line_addressable, window_error};
use super::window::{self, LineWindow, MAX_LINES};
use crate::transcript::Format;

/// How often the transcript is checked for new bytes.
pub const POLL: Duration = Duration::from_millis(500);

/// The parameters: where to start (a line offset, usually the last window's `next_offset`).
#[derive(Deserialize)]
pub(crate) struct FollowQuery {
    offset: Option<u64>,
}

/// What one poll found.
enum Step {
    Lines(LineWindow),
    Nothing,
    Reset(String),
}

/// One poll: the complete lines from `pos` on, if any.
fn poll(path: &PathBuf, format: Option<Format>, pos: u64) -> Result<Step, ApiError> {
    let file = File::open(path).map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            "unreadable",
            e.to_string(),
        )
    })?;
    let len = file.metadata().map_err(|e| window_error(e.into()))?.len();
    if len < pos {
        return Ok(Step::Reset(format!("the transcript shrank to {len} bytes")));
    }
    let end = window::complete_end(&file, len).map_err(|e| window_error(e.into()))?;
    if end <= pos {
        return Ok(Step::Nothing);
    }
    window::read_forward(&file, format, pos, MAX_LINES, end)
        .map(Step::Lines)
        .map_err(window_error)
}

struct Following {
    path: PathBuf,
    format: Option<Format>,
    pos: u64,
    done: bool,
}

/// The handler.
pub(crate) async fn follow(
    State(state): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(query): Query<FollowQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>, ApiError> {
    let (viewable, _) = find(&state, &id)?;
    if viewable.opencode.is_some() {
        return Err(not_line_addressable(&id));
    }
    let start = Following {
        path: viewable.path,
        format: viewable.format,
        pos: query.offset.unwrap_or(0),
        done: false,
    };
    let events = stream::unfold(start, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            let (path, format, pos) = (st.path.clone(), st.format, st.pos);
            let step = tokio::task::spawn_blocking(move || poll(&path, format, pos))
                .await
                .unwrap_or_else(|e| {
                    Err(ApiError::new(
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        "internal",
                        e.to_string(),
                    ))
                });
            let event = match step {
                Ok(Step::Nothing) => {
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                Ok(Step::Lines(window)) => {
                    st.pos = window.next_offset;
                    Event::default().event("lines").json_data(&window)
                }
                Ok(Step::Reset(why)) => {
                    st.done = true;
                    Ok(Event::default().event("reset").data(why))
                }
                Err(e) => {
                    st.done = true;
                    Ok(Event::default().event("failed").data(e.message()))
                }
            };
            let event =
                event.unwrap_or_else(|e| Event::default().event("failed").data(e.to_string()));
            return Some((Ok(event), st));
        }
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
