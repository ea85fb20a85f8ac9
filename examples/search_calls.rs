//! Makes N session searches of one store, for counting a warm search's instructions with
//! callgrind (deterministic, unlike wall time on a shared VM):
//!
//! ```sh
//! AGENTLOG_BENCH_SMOKE=1 AGENTLOG_BENCH_SEARCH_EVENTS=10000 cargo bench --bench search
//! cargo build --profile bench --example search_calls
//! valgrind --tool=callgrind target/release/examples/search_calls \
//!     target/bench-data/search-10000 reuse N
//! target/release/examples/search_calls target/bench-data/search-10000 reuse 200 cpu
//! ```
//!
//! `reuse` keeps one `SearchIndex` (its SQLite connection stays open, as in the bench);
//! `fresh` makes a new one per call (as each CLI call does, less the process start). The query
//! is the bench's rare phrase, or `AGENTLOG_SEARCH_QUERY` when set (as "migration", the bench's
//! common word, or "the failing", a phrase of two common words). `AGENTLOG_SEARCH_SESSION=ID`
//! filters the session search to that session; `AGENTLOG_SEARCH_EVENTS_OF=ID` makes the calls
//! event searches within that session. The first call is the same in both runs, so one warm
//! call's cost is the difference between runs with N=11 and N=1, divided by 10. With `cpu`,
//! each call's thread CPU time is taken too and the warm calls' median printed (not under
//! valgrind: the clock's vDSO lookup fails there).

use std::time::Duration;

use agentlog::query::SessionFilter;
use agentlog::query::{Store, StoreConfig};
use agentlog::search::{EventSearchRequest, SearchConfig, SearchIndex, SessionSearchRequest};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (store, mode, calls, timed) = match args.as_slice() {
        [_, store, mode, calls] => (store, mode, calls, false),
        [_, store, mode, calls, cpu] if cpu == "cpu" => (store, mode, calls, true),
        _ => return Err("usage: search_calls STORE reuse|fresh N [cpu]".into()),
    };
    let calls: usize = calls.parse()?;
    let fresh = match mode.as_str() {
        "reuse" => false,
        "fresh" => true,
        other => return Err(format!("unknown mode {other:?}").into()),
    };
    let store = Store::open(store, StoreConfig::default())?;
    let query =
        std::env::var("AGENTLOG_SEARCH_QUERY").unwrap_or_else(|_| "zanzibar harbour".into());
    let session_filters = match std::env::var("AGENTLOG_SEARCH_SESSION") {
        Ok(id) => vec![SessionFilter::Id { values: vec![id] }],
        Err(_) => Vec::new(),
    };
    let events_of = std::env::var("AGENTLOG_SEARCH_EVENTS_OF").ok();
    let request = SessionSearchRequest {
        query: query.clone(),
        session_filters,
        ..SessionSearchRequest::default()
    };
    let event_request = events_of.map(|session_id| EventSearchRequest {
        session_id,
        query,
        ..EventSearchRequest::default()
    });
    let mut index = SearchIndex::new(&store, SearchConfig::default());
    let mut hits = 0;
    let mut cpu = Vec::with_capacity(calls);
    for _ in 0..calls {
        let before = if timed { thread_cpu() } else { Duration::ZERO };
        if fresh {
            index = SearchIndex::new(&store, SearchConfig::default());
        }
        hits += match &event_request {
            Some(events) => index.search_events(events)?.hits.len(),
            None => index.search_sessions(&request)?.hits.len(),
        };
        if timed {
            cpu.push(thread_cpu().saturating_sub(before));
        }
    }
    // The first call may open or catch the index up: the warm figure leaves it out.
    let mut warm = cpu.get(1..).unwrap_or_default().to_vec();
    warm.sort();
    match warm.get(warm.len() / 2) {
        Some(p50) => println!(
            "{hits} hits; warm call CPU p50 {p50:?} over {} calls",
            warm.len()
        ),
        None => println!("{hits} hits"),
    }
    Ok(())
}

/// The calling thread's CPU time (user and system).
fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        ts.tv_sec.cast_unsigned(),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}
