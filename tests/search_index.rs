//! The search index through the library: what a catch-up reads, the live overlay, and a
//! rewrite that keeps the log's length.
// Test figures (offsets, row counts, nanosecond stamps) are far below 2^53, and Parquet and
// SQLite keep integers as i64, so the numeric casts are deliberate; a failing helper fails its test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

mod search_common;

use std::time::Duration;

use agentlog::query::{
    CheckpointPolicy, SessionEvent, SessionHeader, Store, StoreConfig, SurfaceClass, SurfaceOp,
};
use agentlog::search::{
    EventSearchRequest, SearchConfig, SearchIndex, SessionSearchPage, SessionSearchRequest,
};
use search_common as oracle;
use serde_json::json;

fn ask(index: &mut SearchIndex<'_>, query: &str) -> SessionSearchPage {
    index
        .search_sessions(&SessionSearchRequest {
            query: query.into(),
            ..SessionSearchRequest::default()
        })
        .unwrap()
}

#[test]
fn a_catch_up_reads_only_the_sessions_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..20 {
        let id = format!("s{n}");
        oracle::write_log(
            dir.path(),
            &id,
            &[oracle::header(&id, n), oracle::user(0, 1, "hay")],
        );
    }
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    // Stamps trusted at once (the logs are not written within a timestamp tick of a search).
    let config = SearchConfig {
        settled: Duration::ZERO,
        ..SearchConfig::default()
    };
    let mut index = SearchIndex::new(&store, config);
    assert_eq!(index.catch_up().unwrap().read, 20);
    let idle = index.catch_up().unwrap();
    assert_eq!((idle.read, idle.changed), (0, false));
    oracle::append_lines(dir.path(), "s7", &[oracle::user(1, 2, "needle")]);
    let grew = index.catch_up().unwrap();
    assert_eq!((grew.read, grew.changed), (1, true));
    assert_eq!(ask(&mut index, "needle").hits[0].header.id, "s7");
    std::fs::remove_dir_all(dir.path().join("s7")).unwrap();
    assert!(ask(&mut index, "needle").hits.is_empty());
}

#[test]
fn a_rewrite_of_the_same_length_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    oracle::write_log(
        dir.path(),
        "s",
        &[oracle::header("s", 1), oracle::user(0, 1, "apple")],
    );
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let mut index = SearchIndex::new(&store, SearchConfig::default());
    assert_eq!(ask(&mut index, "apple").hits.len(), 1);
    oracle::write_log(
        dir.path(),
        "s",
        &[oracle::header("s", 1), oracle::user(0, 1, "mango")],
    );
    assert!(ask(&mut index, "apple").hits.is_empty());
    assert_eq!(ask(&mut index, "mango").hits.len(), 1);
}

fn user(seq: u64, text: &str) -> SessionEvent {
    SessionEvent::new(
        "user/message",
        seq,
        seq as i64,
        json!({"id": format!("m{seq}"), "role": "user", "source": {"kind": "user"},
               "content": [{"type": "text", "text": text}]}),
    )
    .with_surface_op(SurfaceOp::Append)
}

#[test]
fn live_sessions_are_searched_and_hide_their_stored_copy() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        checkpoint: CheckpointPolicy {
            max_pending_events: usize::MAX,
            max_delay: Duration::from_hours(1),
        },
        ..StoreConfig::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    store.create_session(SessionHeader::new("live", 5)).unwrap();
    store
        .append("live", vec![user(0, "needle one"), user(1, "needle x")])
        .unwrap();
    let mut index = SearchIndex::new(&store, SearchConfig::default());
    let page = ask(&mut index, "needle");
    assert_eq!(page.hits.len(), 1);
    assert!(page.hits[0].live && !page.hits[0].persisted);
    // Written to disk: still one hit, now persisted too.
    store.checkpoint("live").unwrap();
    let page = ask(&mut index, "needle");
    assert_eq!(page.hits.len(), 1);
    assert!(page.hits[0].live && page.hits[0].persisted);
    // A live rewrite shadows the first message at once.
    let replace = user(2, "needle two")
        .with_surface_op(SurfaceOp::Replace { start: 0, end: 0 })
        .with_sources(vec![0]);
    let before = index
        .search_events(&EventSearchRequest {
            session_id: "live".into(),
            query: "needle".into(),
            limit: Some(1),
            ..EventSearchRequest::default()
        })
        .unwrap();
    store.append("live", vec![replace]).unwrap();
    let request = EventSearchRequest {
        session_id: "live".into(),
        query: "needle".into(),
        ..EventSearchRequest::default()
    };
    let events = index.search_events(&request).unwrap();
    let classes: Vec<_> = events.hits.iter().map(|h| (h.seq, h.surface)).collect();
    assert_eq!(
        classes,
        [
            (1, SurfaceClass::Current),
            (2, SurfaceClass::Current),
            (0, SurfaceClass::Shadowed)
        ]
    );
    // The page before the append is stale.
    let stale = index.search_events(&EventSearchRequest {
        cursor: before.next_cursor,
        limit: Some(1),
        ..request.clone()
    });
    assert_eq!(stale.unwrap_err().code(), "stale_cursor");
    // Closed: served from the log, with the same classes.
    store.close_session("live").unwrap();
    let events = index.search_events(&request).unwrap();
    let classes: Vec<_> = events.hits.iter().map(|h| (h.seq, h.surface)).collect();
    assert_eq!(
        classes,
        [
            (1, SurfaceClass::Current),
            (2, SurfaceClass::Current),
            (0, SurfaceClass::Shadowed)
        ]
    );
}
