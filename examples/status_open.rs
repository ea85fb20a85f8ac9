//! Times the index tier's open-to-answer for one agent directory, two ways taking turns in
//! blocks of calls in one process: `current_generation_at` (answered from the status file when
//! it can be) and the way it answered before the status file (`Index::open`, then the fold's
//! answer: a read-only redb open, its meta record and structure checks, the two windows).
//!
//! ```sh
//! cargo build --release --example status_open
//! target/release/examples/status_open AGENT_DIR [ROUNDS] [CALLS_PER_BLOCK]
//! ```
//!
//! Prints, per way, the median over blocks of the calling thread's CPU time per call and of
//! the wall time per call: on a shared machine CPU time is the fairer figure.

use std::time::{Duration, Instant};

use agentlog::generation::{GenerationRequest, current_generation_at, from_state};
use agentlog::index::Index;
use agentlog::log::LogPaths;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        return Err("usage: status_open AGENT_DIR [ROUNDS] [CALLS_PER_BLOCK]".into());
    };
    let rounds: usize = args.get(2).map_or(Ok(40), |s| s.parse())?;
    let calls: u32 = args.get(3).map_or(Ok(200), |s| s.parse())?;
    let paths = LogPaths::for_agent_dir(dir);
    let request = GenerationRequest::latest();
    // The two ways give the same answer, and the first one writes the status file if needed.
    let fast = current_generation_at(&paths, &request)?;
    let index = Index::open(&paths, &request.index)?;
    let before = from_state(index.state(), &request)?;
    drop(index);
    if (fast.totals, &fast.boundary) != (before.totals, &before.boundary) {
        return Err("the two ways disagree".into());
    }
    let mut ways: [(&str, Vec<f64>, Vec<f64>); 2] = [
        (
            "status file (current_generation_at)",
            Vec::new(),
            Vec::new(),
        ),
        (
            "redb open (Index::open + from_state)",
            Vec::new(),
            Vec::new(),
        ),
    ];
    for round in 0..rounds {
        for turn in 0..2 {
            // Each way goes first in every other round.
            let way = (turn + round) % 2;
            let (cpu0, wall0) = (thread_cpu(), Instant::now());
            for _ in 0..calls {
                if way == 0 {
                    current_generation_at(&paths, &request)?;
                } else {
                    let index = Index::open(&paths, &request.index)?;
                    from_state(index.state(), &request)?;
                }
            }
            let per_call = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(calls);
            ways[way]
                .1
                .push(per_call(thread_cpu().saturating_sub(cpu0)));
            ways[way].2.push(per_call(wall0.elapsed()));
        }
    }
    for (name, cpu, wall) in &mut ways {
        println!(
            "{name}: CPU {:.1} µs, wall {:.1} µs per call (medians of {rounds} blocks of {calls})",
            median(cpu),
            median(wall)
        );
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The calling thread's CPU time (user and system).
fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        ts.tv_sec.cast_unsigned(),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}
