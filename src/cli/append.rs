//! `agentlog append AGENT_DIR`: events from stdin, one JSON object per line; each event's byte
//! offset is printed once it is acknowledged under the chosen durability policy.

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use clap::ValueEnum;

use agentlog::index::{IndexError, Writer, WriterOptions};
use agentlog::log::{Appended, LogError, SyncPolicy};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure, agent_paths};

#[derive(Clone, Copy, ValueEnum)]
pub enum Sync {
    /// fsync each batch before acknowledging it.
    Fsync,
    /// Group commit: acknowledge after the periodic fsync that made the event durable.
    Interval,
    /// Acknowledge once written to the operating system (no fsync).
    None,
}

#[derive(clap::Args)]
pub struct Args {
    /// The agent directory (its log is `AGENT_DIR/logs/events.jsonl`).
    agent_dir: PathBuf,
    /// When an event is acknowledged.
    #[arg(long, value_enum, default_value = "fsync")]
    sync: Sync,
    /// Group-commit interval for --sync interval, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 50)]
    interval_ms: u64,
    /// Commit the index at least this often while appending, in milliseconds (it is also
    /// committed every 65,536 rows or 8 MiB of log, and on exit). Index commits run beside
    /// the appends; one waits only if the previous commit is still running when it comes due.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    commit_interval_ms: u64,
}

/// Lines read from stdin in one go are appended as one batch (one write, one fsync).
const MAX_BATCH: usize = 4096;

enum Input {
    Line(Vec<u8>),
    Failed(std::io::Error),
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let sync = match args.sync {
        Sync::Fsync => SyncPolicy::Fsync,
        Sync::Interval => SyncPolicy::Interval(Duration::from_millis(args.interval_ms.max(1))),
        Sync::None => SyncPolicy::None,
    };
    let mut options = WriterOptions {
        sync,
        ..WriterOptions::default()
    };
    options.commit.interval = Duration::from_millis(args.commit_interval_ms);
    let mut writer = Writer::open(&agent_paths(&args.agent_dir), options)?;
    let (sender, lines) = mpsc::sync_channel::<Input>(MAX_BATCH);
    std::thread::spawn(move || read_stdin(&sender));
    let mut acks = Acks::default();
    let tick = match sync {
        SyncPolicy::Interval(every) => every,
        SyncPolicy::Fsync | SyncPolicy::None => Duration::from_hours(1),
    };
    let mut outcome = Ok(EXIT_OK);
    'input: loop {
        let first = match lines.recv_timeout(tick) {
            Ok(input) => input,
            Err(RecvTimeoutError::Timeout) => {
                acks.print_durable(writer.durable_len())?;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let mut batch = Vec::new();
        for input in std::iter::once(first).chain(lines.try_iter().take(MAX_BATCH - 1)) {
            match input {
                Input::Line(line) => batch.push(line),
                Input::Failed(e) => {
                    outcome = Err(Failure::new(
                        "io_error",
                        EXIT_FAILURE,
                        format!("cannot read stdin: {e}"),
                    ));
                    append(&mut writer, &batch, &mut acks)?;
                    break 'input;
                }
            }
        }
        match append(&mut writer, &batch, &mut acks) {
            Ok(()) => {}
            Err(failure) if failure.exit == EXIT_BAD_INPUT => {
                outcome = Err(failure);
                break;
            }
            Err(failure) => return Err(failure),
        }
        // Under fsync the batch is on disk already; under none, written is acknowledged.
        let durable = match sync {
            SyncPolicy::Interval(_) => writer.durable_len(),
            SyncPolicy::Fsync | SyncPolicy::None => u64::MAX,
        };
        acks.print_durable(durable)?;
    }
    // Everything appended before a stop is acknowledged before we exit.
    if let Some(end) = acks.last_end() {
        writer.wait_durable(end).or_else(|e| match sync {
            SyncPolicy::None => Ok(()),
            _ => Err(e),
        })?;
    }
    acks.print_durable(u64::MAX)?;
    writer.close()?;
    outcome
}

/// Appends a batch; on a bad line, appends the lines before it and reports the bad one.
fn append(writer: &mut Writer, batch: &[Vec<u8>], acks: &mut Acks) -> Result<(), Failure> {
    if batch.is_empty() {
        return Ok(());
    }
    match writer.append_batch_json(batch) {
        Ok(receipts) => {
            acks.pending.extend(receipts);
            Ok(())
        }
        Err(IndexError::Log(LogError::InvalidEvent { index, reason, .. })) => {
            let good = batch.get(..index).unwrap_or_default();
            if !good.is_empty() {
                acks.pending.extend(writer.append_batch_json(good)?);
            }
            let line = acks.appended + acks.pending.len() as u64 + 1;
            Err(Failure::new(
                "invalid_event",
                EXIT_BAD_INPUT,
                format!(
                    "input line {line} rejected, nothing of it written: {}",
                    reason.trim_start_matches("the ")
                ),
            )
            .with("line", line))
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Default)]
struct Acks {
    pending: VecDeque<Appended>,
    /// Events acknowledged so far.
    appended: u64,
}

impl Acks {
    fn last_end(&self) -> Option<u64> {
        self.pending.back().map(|a| a.end)
    }

    fn print_durable(&mut self, durable: u64) -> Result<(), Failure> {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        while let Some(receipt) = self.pending.front().copied() {
            if receipt.end > durable {
                break;
            }
            self.pending.pop_front();
            self.appended += 1;
            writeln!(out, "{}", receipt.start).map_err(|e| {
                Failure::new(
                    "io_error",
                    EXIT_FAILURE,
                    format!("cannot write stdout: {e}"),
                )
            })?;
        }
        out.flush().map_err(|e| {
            Failure::new(
                "io_error",
                EXIT_FAILURE,
                format!("cannot write stdout: {e}"),
            )
        })
    }
}

fn read_stdin(sender: &mpsc::SyncSender<Input>) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    loop {
        let mut line = Vec::new();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if sender.send(Input::Line(line)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = sender.send(Input::Failed(e));
                return;
            }
        }
    }
}
