//! `agentlog verify AGENT_DIR [--deep]`: check the index against the log without changing it.

use std::path::PathBuf;

use serde::Serialize;

use agentlog::generation::{full_scan, full_scan_boundaries};
use agentlog::index::{Index, IndexError, IndexOptions};
use agentlog::log::{LineScanner, open_for_read};

use super::{EXIT_FAILURE, EXIT_OK, Failure, agent_paths, print_json};

#[derive(clap::Args)]
pub struct Args {
    /// The agent directory (its log is `AGENT_DIR/logs/events.jsonl`).
    agent_dir: PathBuf,
    /// Also recompute everything from the whole log: the running checksum of the indexed
    /// prefix, the totals, counts and boundaries, and every row of every table (compared
    /// with a rebuild of the indexed prefix in a scratch directory under the system's
    /// temporary directory, `$TMPDIR` if set; it needs about as much space as the index).
    #[arg(long)]
    deep: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Check {
    #[serde(rename = "check")]
    name: &'static str,
    ok: bool,
    detail: String,
}

#[derive(Serialize)]
struct Report {
    valid: bool,
    watermark: Option<u64>,
    log_bytes: u64,
    checks: Vec<Check>,
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let paths = agent_paths(&args.agent_dir);
    let log = open_for_read(&paths.log)?;
    let log_bytes = log
        .metadata()
        .map_err(|e| Failure::new("io_error", EXIT_FAILURE, e.to_string()))?
        .len();
    let options = IndexOptions {
        read_only: true,
        ..IndexOptions::default()
    };
    let mut checks = Vec::new();
    let mut watermark = None;
    match Index::open(&paths, &options) {
        Err(IndexError::Log(e)) => return Err(e.into()),
        Err(e) => checks.push(Check {
            name: "open",
            ok: false,
            detail: e.to_string(),
        }),
        Ok(index) => {
            watermark = Some(index.watermark());
            checks.push(Check {
                name: "open",
                ok: true,
                detail: format!(
                    "versions, head and tail windows and table counts agree with the log; {} bytes after the watermark",
                    log_bytes - index.watermark()
                ),
            });
            if args.deep {
                deep(&index, &log, &options, &mut checks)?;
            }
        }
    }
    let valid = checks.iter().all(|c| c.ok);
    let report = Report {
        valid,
        watermark,
        log_bytes,
        checks,
    };
    if args.json {
        print_json(&report)?;
    } else {
        for check in &report.checks {
            outln!(
                "{:<8} {:<5} {}",
                check.name,
                if check.ok { "ok" } else { "FAIL" },
                check.detail
            );
        }
        outln!(
            "index is {}",
            if valid {
                "valid"
            } else {
                "NOT valid: run `agentlog index` to rebuild it"
            }
        );
    }
    Ok(if valid { EXIT_OK } else { EXIT_FAILURE })
}

fn deep(
    index: &Index,
    log: &std::fs::File,
    options: &IndexOptions,
    checks: &mut Vec<Check>,
) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::new("io_error", EXIT_FAILURE, e.to_string());
    let mut scanner = LineScanner::new(log, 0, index.watermark(), options.max_line, 0);
    while scanner.next_line().map_err(io)?.is_some() {}
    let crc = scanner.crc();
    checks.push(Check {
        name: "crc",
        ok: crc == index.running_crc() && scanner.end() == index.watermark(),
        detail: format!(
            "running crc32 of [0, {}): index {:08x}, log {:08x}",
            index.watermark(),
            index.running_crc(),
            crc
        ),
    });
    let state = full_scan(log, options.extractor(), options.max_line).map_err(io)?;
    checks.push(Check {
        name: "fold",
        ok: &state == index.state(),
        detail: format!(
            "events {} / {}, boundaries {} / {}, api calls {} / {} (index / scan)",
            index.state().events,
            state.events,
            index.state().boundaries,
            state.boundaries,
            index.state().totals.api_calls,
            state.totals.api_calls
        ),
    });
    let in_log = full_scan_boundaries(log, options).map_err(io)?.0;
    let stored = index.boundaries().map_err(Failure::from)?;
    checks.push(Check {
        name: "bounds",
        ok: in_log == stored,
        detail: format!(
            "{} boundaries stored, {} in the log",
            stored.len(),
            in_log.len()
        ),
    });
    match index.compare_with_rebuild() {
        Ok(tables) => checks.extend(tables.into_iter().map(|table| Check {
            name: "rows",
            ok: table.matches(),
            detail: match &table.first_difference {
                None => format!("{}: {} rows, as a rebuild gives", table.table, table.rows),
                Some(difference) => format!(
                    "{}: {} rows, a rebuild gives {}; {difference}",
                    table.table, table.rows, table.expected_rows
                ),
            },
        })),
        // Unreadable rows are a finding about the index; anything else means we could not
        // check (the log, or the scratch directory the rebuild goes to).
        Err(e @ IndexError::Damaged { .. }) => checks.push(Check {
            name: "rows",
            ok: false,
            detail: e.to_string(),
        }),
        Err(e) => return Err(Failure::from(e)),
    }
    Ok(())
}
