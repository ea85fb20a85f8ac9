//! The library in one sitting: an agent appends token events and a molt, asks how much it has
//! used since the molt, then keeps a session log and reads a window of it back.
//!
//! ```sh
//! cargo run --example quickstart
//! ```

use agentlog::generation::{GenerationRequest, current_generation};
use agentlog::index::{Writer, WriterOptions};
use agentlog::log::LogPaths;
use agentlog::query::{
    QueryConfig, QueryService, SessionEvent, SessionHeader, Store, StoreConfig, SurfaceOp,
    WindowRequest,
};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;

    // 1. An agent's event log: append, and the index beside it is kept current.
    let agent = dir.path().join("agent");
    let mut writer = Writer::open(&LogPaths::for_agent_dir(&agent), WriterOptions::default())?;
    for line in [
        r#"{"type": "llm_response", "input_tokens": 900, "output_tokens": 40, "cached_tokens": 500}"#,
        r#"{"type": "psyche_molt", "molt_count": 1, "initiator": "system"}"#,
        r#"{"type": "llm_response", "input_tokens": 1200, "output_tokens": 80, "cached_tokens": 900}"#,
    ] {
        writer.append_json(line.as_bytes())?;
    }
    writer.close()?;

    // 2. Status: the tokens of the generation since the last molt, from the index in O(1).
    let current = current_generation(&agent, &GenerationRequest::expecting(1))?;
    println!(
        "since molt 1: {} input, {} output tokens in {} call(s), verified: {}",
        current.totals.input_tokens,
        current.totals.output_tokens,
        current.totals.api_calls,
        current.verified
    );
    if current.totals.input_tokens != 1200 || current.totals.api_calls != 1 {
        return Err("the generation since the molt holds the last response only".into());
    }

    // 3. A session store: create a session, append events, read a window around one event.
    let store = Store::open(dir.path().join("sessions"), StoreConfig::default())?;
    store.create_session(SessionHeader::new("s1", 1_786_000_000_000))?;
    let events = (0..5)
        .map(|seq| {
            let message = json!({
                "id": format!("m{seq}"),
                "role": "user",
                "source": {"kind": "user"},
                "content": [{"type": "text", "text": format!("message {seq}")}],
            });
            // A message is a surface event: it says how it changes the visible conversation.
            SessionEvent::new("user/message", seq, 1_786_000_000_000, message)
                .with_surface_op(SurfaceOp::Append)
        })
        .collect();
    store.append("s1", events)?;
    store.checkpoint("s1")?;
    let service = QueryService::new(&store, QueryConfig::default())?;
    let window = service.read_event(&WindowRequest {
        before: Some(1),
        after: Some(1),
        ..WindowRequest::new("s1", 2)
    })?;
    println!(
        "session {}: events {}..={} around seq {}",
        window.session.id, window.start_seq, window.end_seq, window.target.seq
    );
    if (window.start_seq, window.end_seq) != (1, 3) {
        return Err("the window holds one event each side of seq 2".into());
    }
    Ok(())
}
