//! `agentlog usage --watch`: the live view (`transcript::live_with`) redrawn in place every
//! `--interval` seconds on a terminal (one block of plain text per refresh otherwise, one JSON
//! object per line with `--json`), until interrupted (Ctrl-C: exit 0, nothing left half
//! drawn). Each refresh reads the archive as plain `usage` does (`--no-archive`: the originals
//! alone) and is answered from the usage snapshot: it reads only what the transcripts gained.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentlog::transcript::{LiveView, UsageOptions, UsageRow, live_with};
use tokio::signal::unix::{SignalKind, signal};

use super::table::money;
use super::table::thousands;
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure};

/// Runs the live view until interrupted; `archive` is the archive directory to read too.
pub fn run(
    paths: &[PathBuf],
    options: &UsageOptions,
    archive: Option<&Path>,
    interval: f64,
    json: bool,
) -> Result<u8, Failure> {
    if !(interval.is_finite() && (0.1..=86_400.0).contains(&interval)) {
        return Err(Failure::new(
            "bad_input",
            EXIT_BAD_INPUT,
            format!("--interval {interval} is not a number of seconds from 0.1 to 86400"),
        ));
    }
    // A one-thread runtime only to wait for Ctrl-C or the next refresh, whichever is first.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .map_err(|e| {
            Failure::new(
                "io_error",
                EXIT_FAILURE,
                format!("cannot wait for Ctrl-C: {e}"),
            )
        })?;
    let terminal = std::io::stdout().is_terminal() && !json;
    let report = |o: &UsageOptions| agentlog::archive::usage(paths, o, archive, &|_, _| {});
    runtime.block_on(async {
        // Installed before the first refresh, so an early Ctrl-C is caught too.
        let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| {
            Failure::new(
                "io_error",
                EXIT_FAILURE,
                format!("cannot catch Ctrl-C: {e}"),
            )
        })?;
        loop {
            let view = live_with(options, &report);
            let text = if json {
                serde_json::to_string(&view).unwrap_or_default() + "\n"
            } else {
                draw(&view)
            };
            if terminal {
                // Home, then clear to the end of the screen: redrawn in place without flicker.
                out!("\x1b[H\x1b[J{text}");
            } else if json {
                out!("{text}");
            } else {
                out!("{text}\n");
            }
            let _ = std::io::stdout().flush();
            tokio::select! {
                _ = interrupt.recv() => break,
                () = tokio::time::sleep(Duration::from_secs_f64(interval)) => {}
            }
        }
        Ok::<(), Failure>(())
    })?;
    if terminal {
        // The prompt comes back on a line of its own, after the last view.
        out!("\n");
    }
    Ok(EXIT_OK)
}

fn line(name: &str, row: Option<&UsageRow>) -> String {
    match row {
        None => format!("{name:<8} -\n"),
        Some(r) => format!(
            "{name:<8} {:>14} tokens  {:>10}  {} messages\n",
            thousands(r.tally.usage.total()),
            money(&r.cost),
            thousands(r.tally.messages)
        ),
    }
}

fn draw(view: &LiveView) -> String {
    let mut out = format!("agentlog usage --watch   {}\n\n", view.at);
    out.push_str(&line("block", view.block.as_ref()));
    if let Some(b) = view.block.as_ref().and_then(|r| r.block.as_ref()) {
        let _ = writeln!(out, "         {} - {}", b.start, b.end);
        if let (Some(rate), Some(p)) = (b.burn_rate, b.projection) {
            let _ = writeln!(
                out,
                "         {:.0} tokens/min, projected {} tokens by its end ({} min left)",
                rate.tokens_per_minute,
                thousands(p.total_tokens),
                p.remaining_minutes
            );
        }
    }
    out.push_str(&line("today", view.today.as_ref()));
    out.push_str(&line("session", view.session.as_ref()));
    if let Some(s) = &view.session {
        let _ = writeln!(out, "         {}", s.key);
    }
    out
}
