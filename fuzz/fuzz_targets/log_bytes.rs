//! Arbitrary bytes as the log itself (`events.jsonl`), with no index beside it.
//!
//! Checks, all against the naive oracle (`tests/common/oracle.rs`) on the same bytes:
//! * `Index::open` builds the index (outcome Created); its state and boundary rows equal the
//!   oracle;
//! * `current_generation_at` with every start tier (`Index`; `ReverseScan` with the default
//!   8 MiB window and windows of 1, 7, 64 bytes and half the log; `FullScan`), for expected molt
//!   counts None, 0, 1, the latest boundary's count and its successor (and, on the index and
//!   full-scan tiers, with `trust_unverifiable_boundaries` on as well): the same label, totals
//!   and boundary as the oracle, or a `MoltMismatch` exactly when `Oracle::expect` says so, with the same `found`;
//!   the index and full-scan tiers answer themselves (no step-aside);
//! * `generations_at` (index and full scan) equals the oracle's generations;
//! * the same with a 24-byte maximum line size (the index is rebuilt: `ProfileChanged`), against
//!   `Oracle::with_max_line`.
#![no_main]

use agentlog::generation::{DEFAULT_REVERSE_SCAN_BYTES, Tier};
use agentlog::index::{IndexOptions, IndexOutcome, StaleReason};
use libfuzzer_sys::fuzz_target;

#[path = "../common/mod.rs"]
mod common;
#[path = "../../tests/common/oracle.rs"]
mod oracle;

use oracle::Oracle;

fuzz_target!(|data: &[u8]| {
    common::install_panic_filter();
    let paths = common::paths();
    common::reset(&paths);
    std::fs::write(&paths.log, data).unwrap();

    let options = IndexOptions::default();
    let oracle = Oracle::of(data);
    let outcome = common::check_index_open(&paths, &oracle, &options);
    assert!(
        matches!(outcome, IndexOutcome::Created { .. }),
        "first open: {outcome:?}"
    );

    let half = (data.len() as u64 / 2).max(1);
    for expected in common::expectations(&oracle) {
        for trust in [false, true] {
            let tiers: &[(Tier, u64)] = if trust {
                &[(Tier::Index, 0), (Tier::FullScan, 0)]
            } else {
                &[
                    (Tier::Index, 0),
                    (Tier::ReverseScan, DEFAULT_REVERSE_SCAN_BYTES),
                    (Tier::ReverseScan, 1),
                    (Tier::ReverseScan, 7),
                    (Tier::ReverseScan, 64),
                    (Tier::ReverseScan, half),
                    (Tier::FullScan, 0),
                ]
            };
            for &(tier, window) in tiers {
                let request = common::request(tier, expected, trust, window, &options);
                common::check_generation(&paths, &oracle, &request, true);
            }
        }
    }
    for tier in [Tier::Index, Tier::FullScan] {
        let request = common::request(tier, None, false, 0, &options);
        common::check_generations(&paths, &oracle, &request);
    }

    // A small maximum line size: long lines become invalid in every tier alike.
    let small = IndexOptions {
        max_line: 24,
        ..IndexOptions::default()
    };
    let oracle = Oracle::with_max_line(data, 24);
    let outcome = common::check_index_open(&paths, &oracle, &small);
    assert!(
        matches!(
            outcome,
            IndexOutcome::Rebuilt {
                reason: StaleReason::ProfileChanged,
                ..
            }
        ),
        "open with another max_line: {outcome:?}"
    );
    for expected in [None, Some(1)] {
        for (tier, window) in [
            (Tier::Index, 0),
            (Tier::ReverseScan, 64),
            (Tier::ReverseScan, DEFAULT_REVERSE_SCAN_BYTES),
            (Tier::FullScan, 0),
        ] {
            let request = common::request(tier, expected, false, window, &small);
            common::check_generation(&paths, &oracle, &request, true);
        }
    }
    for tier in [Tier::Index, Tier::FullScan] {
        let request = common::request(tier, None, false, 0, &small);
        common::check_generations(&paths, &oracle, &request);
    }
});
