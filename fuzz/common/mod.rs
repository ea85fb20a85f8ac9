//! Helpers shared by the fuzz targets: one scratch directory per fuzz process, a panic filter
//! for redb's internal (caught) panics, and comparisons of every tier against the naive oracle
//! (`tests/common/oracle.rs`, included by each target as `crate::oracle`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use agentlog::event::FoldState;
use agentlog::generation::{
    GenerationError, GenerationRequest, Tier, current_generation_at, generations_at,
};
use agentlog::index::{Index, IndexOptions, IndexOutcome};
use agentlog::log::LogPaths;

use crate::oracle::{OTotals, Oracle};

/// The scratch directory of this fuzz process, `agentlog-fuzz-<pid>` in /dev/shm when it
/// exists (so the fsyncs of redb commits cost nothing), else in the temp dir. Created once;
/// files inside are reset by each iteration. libFuzzer ends a process with `exit` or `abort`,
/// so nothing is cleaned up then: each new process first removes the directories of fuzz
/// processes that no longer run (fork mode starts many).
pub fn workdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let parent = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        if let Ok(entries) = std::fs::read_dir(&parent) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("agentlog-fuzz-")) else {
                    continue;
                };
                if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = parent.join(format!("agentlog-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cannot create the fuzz scratch directory");
        dir
    })
}

/// `workdir()/logs/events.jsonl` and its index.
pub fn paths() -> LogPaths {
    static PATHS: OnceLock<LogPaths> = OnceLock::new();
    PATHS
        .get_or_init(|| {
            let paths = LogPaths::for_agent_dir(workdir());
            std::fs::create_dir_all(paths.log.parent().unwrap()).unwrap();
            paths
        })
        .clone()
}

/// Removes the log and the index (and anything else in the log directory).
pub fn reset(paths: &LogPaths) {
    let dir = paths.log.parent().unwrap();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path: PathBuf = entry.path();
            if path.is_dir() {
                let _ = std::fs::remove_dir_all(&path);
            } else {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

static REDB_PANICS: AtomicU64 = AtomicU64::new(0);

/// libfuzzer-sys installs a panic hook that aborts the process on *any* panic, even one that
/// is caught. agentlog deliberately runs redb calls under `catch_unwind` (redb may panic on a
/// damaged file, see `src/index/db.rs::guarded`), so a panic raised inside redb's own source is
/// let through to be caught; if agentlog does not catch it, libfuzzer-sys still sees the
/// unwinding and aborts. Every other panic (our assertions, agentlog's code) aborts at once.
/// The first few redb panics are printed, so the record shows they happen.
pub fn install_panic_filter() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_redb = info
                .location()
                .is_some_and(|l| l.file().contains("/redb-") || l.file().starts_with("redb"));
            if in_redb {
                let n = REDB_PANICS.fetch_add(1, Ordering::Relaxed);
                let verbose = std::env::var_os("AGENTLOG_FUZZ_VERBOSE").is_some();
                if n < 3 || verbose {
                    eprintln!("[agentlog-fuzz] redb panicked (expected to be caught): {info}");
                }
                if verbose {
                    eprintln!("{}", std::backtrace::Backtrace::force_capture());
                }
                return;
            }
            previous(info);
        }));
    });
}

/// The oracle's latest boundary as (offset, `molt_count`, initiator).
fn oracle_latest(oracle: &Oracle) -> Option<(u64, Option<u64>, String)> {
    oracle
        .latest()
        .map(|b| (b.offset, b.molt_count, b.initiator.clone()))
}

/// A fold state over the whole log (an index's, a writer's) must equal the oracle.
pub fn check_state(what: &str, state: &FoldState, oracle: &Oracle) {
    assert_eq!(
        OTotals::from(state.since_latest()),
        oracle.since(),
        "{what}: totals since the latest boundary"
    );
    assert_eq!(
        OTotals::from(state.totals),
        oracle.lifetime(),
        "{what}: lifetime totals"
    );
    let latest = state.latest.as_ref().map(|s| {
        (
            s.boundary.offset,
            s.boundary.molt_count.value(),
            s.boundary.initiator.clone(),
        )
    });
    assert_eq!(latest, oracle_latest(oracle), "{what}: latest boundary");
    if let Some(start) = &state.latest {
        assert_eq!(
            start.ordinal,
            oracle.boundaries.len() as u64,
            "{what}: ordinal of the latest boundary"
        );
        assert_eq!(
            OTotals::from(start.totals_before),
            oracle.lifetime_before_latest(),
            "{what}: totals before the latest boundary"
        );
    }
    assert_eq!(
        state.boundaries,
        oracle.boundaries.len() as u64,
        "{what}: boundary count"
    );
    assert_eq!(state.events, oracle.events, "{what}: event count");
    assert_eq!(
        state.diagnostics.invalid_lines, oracle.invalid_lines,
        "{what}: invalid line count"
    );
}

/// Extra views of the oracle that the fuzz targets need.
pub trait OracleExt {
    fn lifetime_before_latest(&self) -> OTotals;
}

impl OracleExt for Oracle {
    fn lifetime_before_latest(&self) -> OTotals {
        OTotals::sum(&self.generations[..self.generations.len() - 1])
    }
}

/// One generation request, checked against `Oracle::expect`.
pub fn check_generation(
    paths: &LogPaths,
    oracle: &Oracle,
    request: &GenerationRequest,
    strict_tier: bool,
) {
    let what = format!(
        "current_generation(expected {:?}, trust {}, start {}, window {}, max_line {})",
        request.expected_molt_count,
        request.trust_unverifiable_boundaries,
        request.start_tier,
        request.reverse_scan_bytes,
        request.index.max_line
    );
    let got = current_generation_at(paths, request);
    let want = oracle.expect(
        request.expected_molt_count,
        request.trust_unverifiable_boundaries,
    );
    match (got, want) {
        (Ok(current), Ok(label)) => {
            assert_eq!(current.molt_count, label, "{what}: label");
            assert_eq!(
                OTotals::from(current.totals),
                oracle.since(),
                "{what}: totals ({:?} answered, stepped aside: {:?})",
                current.tier,
                current.stepped_aside
            );
            let boundary = current
                .boundary
                .as_ref()
                .map(|b| (b.offset, b.molt_count.value(), b.initiator.clone()));
            assert_eq!(boundary, oracle_latest(oracle), "{what}: boundary");
            let verified = match (request.expected_molt_count, oracle.latest()) {
                (Some(0), None) => true,
                (Some(n), Some(b)) => b.molt_count == Some(n),
                _ => false,
            };
            assert_eq!(current.verified, verified, "{what}: verified");
            assert!(
                current.tier >= request.start_tier,
                "{what}: answered by {:?}, above the start tier",
                current.tier
            );
            if strict_tier {
                match request.start_tier {
                    Tier::Index | Tier::FullScan => assert_eq!(
                        current.tier, request.start_tier,
                        "{what}: stepped aside: {:?}",
                        current.stepped_aside
                    ),
                    Tier::ReverseScan => {}
                }
            }
        }
        (
            Err(GenerationError::MoltMismatch {
                expected,
                found,
                boundary,
                ..
            }),
            Err(want_found),
        ) => {
            assert_eq!(Some(expected), request.expected_molt_count, "{what}");
            assert_eq!(found, want_found, "{what}: mismatch found");
            let boundary = boundary.map(|b| (b.offset, b.molt_count.value(), b.initiator));
            assert_eq!(boundary, oracle_latest(oracle), "{what}: mismatch boundary");
        }
        (got, want) => panic!("{what}: got {got:?}, the oracle expects {want:?}"),
    }
}

/// Every generation, checked against the oracle's generations.
pub fn check_generations(paths: &LogPaths, oracle: &Oracle, request: &GenerationRequest) {
    let what = format!("generations(start {})", request.start_tier);
    let got = match generations_at(paths, request) {
        Ok(g) => g,
        Err(e) => panic!("{what}: {e:?}"),
    };
    assert_eq!(
        got.generations.len(),
        oracle.generations.len(),
        "{what}: generation count"
    );
    for (i, (g, o)) in got.generations.iter().zip(&oracle.generations).enumerate() {
        assert_eq!(g.ordinal, i as u64, "{what}: ordinal");
        assert_eq!(
            OTotals::from(g.totals),
            *o,
            "{what}: totals of generation {i}"
        );
        if i == 0 {
            assert!(
                g.boundary.is_none(),
                "{what}: boot generation has a boundary"
            );
            assert_eq!(g.molt_count, Some(0), "{what}: boot molt count");
        } else {
            let ob = &oracle.boundaries[i - 1];
            let b = g.boundary.as_ref().expect("a boundary");
            assert_eq!(b.offset, ob.offset, "{what}: boundary {i} offset");
            assert_eq!(
                b.molt_count.value(),
                ob.molt_count,
                "{what}: boundary {i} molt_count"
            );
            assert_eq!(
                g.molt_count, ob.molt_count,
                "{what}: generation {i} molt_count"
            );
            assert_eq!(b.initiator, ob.initiator, "{what}: boundary {i} initiator");
        }
    }
    assert_eq!(
        OTotals::from(got.lifetime),
        oracle.lifetime(),
        "{what}: lifetime"
    );
}

/// Opens the index (a reader's open), checks its state and returns the outcome.
pub fn check_index_open(paths: &LogPaths, oracle: &Oracle, options: &IndexOptions) -> IndexOutcome {
    let index = match Index::open(paths, options) {
        Ok(index) => index,
        Err(e) => panic!("Index::open failed: {e:?}"),
    };
    check_state(
        &format!("index ({})", index.outcome()),
        index.state(),
        oracle,
    );
    let outcome = index.outcome().clone();
    match index.boundaries() {
        Ok(starts) => {
            check_boundaries(&starts, oracle);
            outcome
        }
        // Damage the open did not look at (it validates in O(1), not every row) may surface
        // in a query of an index that was not just built, as a typed error; the query then
        // rebuilds the index if it can ("a corrupt index is rebuilt, never believed"). So the
        // next open must give a sound index: rebuilt by that query (Fresh now) or by the open.
        Err(e @ agentlog::index::IndexError::Damaged { .. })
            if matches!(
                outcome,
                IndexOutcome::Fresh
                    | IndexOutcome::CaughtUp { .. }
                    | IndexOutcome::ReadOnly {
                        why: agentlog::index::ReadOnlyReason::SmallTail,
                        ..
                    }
            ) =>
        {
            drop(index);
            note(&format!("rows found damaged after a {outcome} open: {e}"));
            let index = match Index::open(paths, options) {
                Ok(index) => index,
                Err(e2) => panic!("reopen after {e:?} failed: {e2:?}"),
            };
            let reopened = index.outcome().clone();
            check_state(
                &format!("index reopened ({reopened})"),
                index.state(),
                oracle,
            );
            match index.boundaries() {
                Ok(starts) => check_boundaries(&starts, oracle),
                Err(e2) => {
                    panic!("the index stays damaged: {e:?}, then a {reopened} reopen, then {e2:?}")
                }
            }
            reopened
        }
        Err(e) => panic!("Index::boundaries after a {outcome} open: {e:?}"),
    }
}

fn check_boundaries(starts: &[agentlog::event::GenerationStart], oracle: &Oracle) {
    assert_eq!(starts.len(), oracle.boundaries.len(), "index boundaries");
    let mut before = OTotals::default();
    for (i, (s, ob)) in starts.iter().zip(&oracle.boundaries).enumerate() {
        assert_eq!(s.ordinal, i as u64 + 1, "index boundary ordinal");
        assert_eq!(s.boundary.offset, ob.offset, "index boundary offset");
        assert_eq!(
            s.boundary.molt_count.value(),
            ob.molt_count,
            "index boundary molt"
        );
        assert_eq!(
            s.boundary.initiator, ob.initiator,
            "index boundary initiator"
        );
        let g = oracle.generations[i];
        before = OTotals {
            input: before.input + g.input,
            output: before.output + g.output,
            cached: before.cached + g.cached,
            thinking: before.thinking + g.thinking,
            calls: before.calls + g.calls,
        };
        assert_eq!(
            OTotals::from(s.totals_before),
            before,
            "totals before boundary {}",
            i + 1
        );
    }
}

/// Prints an observation (not a failure) the first few times.
pub fn note(what: &str) {
    static NOTES: AtomicU64 = AtomicU64::new(0);
    if NOTES.fetch_add(1, Ordering::Relaxed) < 5
        || std::env::var_os("AGENTLOG_FUZZ_VERBOSE").is_some()
    {
        eprintln!("[agentlog-fuzz] note: {what}");
    }
}

/// The expected molt counts worth asking about for this log: none, 0, 1, and the latest
/// boundary's count and its successor.
pub fn expectations(oracle: &Oracle) -> Vec<Option<u64>> {
    let mut out = vec![None, Some(0), Some(1)];
    if let Some(Some(m)) = oracle.latest().map(|b| b.molt_count) {
        for n in [m, m.saturating_add(1)] {
            if !out.contains(&Some(n)) {
                out.push(Some(n));
            }
        }
    }
    out
}

/// A request with the given tier and expectation.
pub fn request(
    start_tier: Tier,
    expected: Option<u64>,
    trust: bool,
    window: u64,
    options: &IndexOptions,
) -> GenerationRequest {
    let mut r = GenerationRequest::latest();
    r.expected_molt_count = expected;
    r.trust_unverifiable_boundaries = trust;
    r.start_tier = start_tier;
    r.reverse_scan_bytes = window;
    r.index = options.clone();
    r
}

/// Type filters on the index as it now stands, which may still hold damage no open looks at
/// (a cleared type mask bit, a key: docs/FORMAT.md, "Types and type masks"). Each filter answers, or fails with an
/// error; whatever it answers is true of the log: every offset is an event of that type, in
/// file order, and each line read back is that whole event. With `exact` (an index built from
/// scratch, or never damaged) the answers are exactly the oracle's.
pub fn check_type_filters(paths: &LogPaths, oracle: &Oracle, options: &IndexOptions, exact: bool) {
    let index = match Index::open(paths, options) {
        Ok(index) => index,
        Err(e) => panic!("Index::open for type filters failed: {e:?}"),
    };
    let mut names = oracle.kinds();
    names.push("no_such_type");
    let middle = oracle
        .event_lines
        .get(oracle.event_lines.len() / 2)
        .map_or(0, |e| e.offset);
    for name in names {
        let expected = oracle.offsets_of_type(name);
        let is_true = |offsets: &[u64]| {
            offsets.windows(2).all(|w| w[0] < w[1])
                && offsets.iter().all(|o| expected.binary_search(o).is_ok())
        };
        if let Ok(all) = index.offsets_of_type(name, 0, usize::MAX) {
            assert!(is_true(&all), "{name}: {all:?} is not true of the log");
            if exact {
                assert_eq!(all, expected, "{name}: not the oracle's offsets");
            }
        }
        if let Ok(some) = index.offsets_of_type(name, middle, 2) {
            assert!(
                is_true(&some) && some.iter().all(|&o| o >= middle),
                "{name}: {some:?}"
            );
            if exact {
                let want: Vec<u64> = expected
                    .iter()
                    .copied()
                    .filter(|&o| o >= middle)
                    .take(2)
                    .collect();
                assert_eq!(some, want, "{name} from {middle}: not the oracle's");
            }
        }
        if let Ok(lines) = index.lines_of_type(name, u64::MAX) {
            let offsets: Vec<u64> = lines.iter().map(|(o, _)| *o).collect();
            assert!(is_true(&offsets), "{name}: lines at {offsets:?}");
            for (offset, line) in &lines {
                let event = oracle
                    .event_lines
                    .iter()
                    .find(|e| e.offset == *offset)
                    .unwrap();
                assert_eq!(
                    line.len() as u64,
                    event.len,
                    "{name}: the line at {offset} is not the whole event"
                );
            }
            if exact {
                assert_eq!(
                    offsets, expected,
                    "{name}: lines not at the oracle's offsets"
                );
            }
        }
        if let Ok(last) = index.last_offset_of_type(name) {
            assert!(
                last.is_none_or(|o| expected.binary_search(&o).is_ok()),
                "{name}: last {last:?}"
            );
            if exact {
                assert_eq!(
                    last,
                    expected.last().copied(),
                    "{name}: last is not the oracle's"
                );
            }
        }
    }
}
