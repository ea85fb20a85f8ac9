//! Makes N calls of one session query through one `QueryService`, for counting a call's
//! instructions with callgrind (deterministic, unlike wall time on a shared VM):
//!
//! ```sh
//! cargo build --release --example query_calls
//! valgrind --tool=callgrind target/release/examples/query_calls STORE QUERY N [SEQ]
//! ```
//!
//! `STORE` holds one session `s` (the sessions bench writes them under
//! `target/bench-data/session-<events>`); `QUERY` is `pm3` or `pm50` (a window of ±3 or ±50
//! around event `SEQ`, by default 50000, the middle of the 100k-event session) or `filter`
//! (the events of type `compaction/summary`). One call's cost is the difference between runs
//! with N=11 and N=1, divided by 10.

use agentlog::query::{QueryConfig, QueryService, Store, StoreConfig, WindowRequest};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (store, query, calls, seq) = match args.as_slice() {
        [_, store, query, calls] => (store, query, calls, 50_000),
        [_, store, query, calls, seq] => (store, query, calls, seq.parse()?),
        _ => return Err("usage: query_calls STORE pm3|pm50|filter N [SEQ]".into()),
    };
    let calls: usize = calls.parse()?;
    let store = Store::open(store, StoreConfig::default())?;
    let service = QueryService::new(&store, QueryConfig::default())?;
    let mut returned = 0;
    for _ in 0..calls {
        returned += match query.as_str() {
            "pm3" | "pm50" => {
                let around = if query == "pm3" { 3 } else { 50 };
                let request = WindowRequest::new("s", seq).with_neighbours(around, around);
                service.read_event(&request)?.events.len()
            }
            "filter" => service
                .list_events_of_types("s", &["compaction/summary"])?
                .len(),
            other => return Err(format!("unknown query {other:?}").into()),
        };
    }
    println!("{returned} events returned");
    Ok(())
}
