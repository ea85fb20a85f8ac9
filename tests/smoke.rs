use agentlog::index::{Index, IndexOptions, Writer, WriterOptions};
use agentlog::log::{LogPaths, SyncPolicy};
use agentlog::session::{SessionRequest, Tier, agent_session_at};

#[test]
fn smoke() {
    let dir = tempfile::tempdir().unwrap();
    let paths = LogPaths::for_agent_dir(dir.path());
    let mut w = Writer::open(
        &paths,
        WriterOptions {
            sync: SyncPolicy::None,
            ..Default::default()
        },
    )
    .unwrap();
    println!("{:?}", w.outcome());
    for i in 0..10 {
        w.append_json(format!(r#"{{"type":"llm_response","ts":{i},"input_tokens":100,"output_tokens":1,"cached_tokens":50,"thinking_tokens":2}}"#).as_bytes()).unwrap();
        if i == 5 {
            w.append_json(br#"{"type":"psyche_molt","molt_count":1,"initiator":"system"}"#)
                .unwrap();
        }
    }
    println!("{:?}", w.state().since_latest());
    w.close().unwrap();
    let idx = Index::open(&paths, &IndexOptions::default()).unwrap();
    println!("{:?} {:?}", idx.outcome(), idx.state().since_latest());
    println!("{:?}", idx.boundaries().unwrap());
    drop(idx);
    for tier in [Tier::Index, Tier::ReverseScan, Tier::FullScan] {
        let mut req = SessionRequest::expecting(1);
        req.start_tier = tier;
        let s = agent_session_at(&paths, &req).unwrap();
        println!(
            "{tier}: {:?} {:?} {}",
            s.totals,
            s.index_outcome,
            s.boundary_initiator()
        );
        assert_eq!(s.totals.api_calls, 4);
    }
    let err = agent_session_at(&paths, &SessionRequest::expecting(2)).unwrap_err();
    println!("{err}");
}
