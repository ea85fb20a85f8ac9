//! `agentlog usage --watch`: the live view (`transcript::live`) redrawn in place every
//! `--interval` seconds on a terminal (one block of plain text per refresh otherwise, one JSON
//! object per line with `--json`), until interrupted. Each refresh is answered from the usage
//! snapshot: it reads only what the transcripts gained.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use agentlog::transcript::{LiveView, UsageOptions, UsageRow, live};

use super::table::money;
use super::table::thousands;
use super::{EXIT_BAD_INPUT, EXIT_OK, Failure};

/// Runs the live view until interrupted.
pub fn run(
    paths: &[PathBuf],
    options: &UsageOptions,
    interval: f64,
    json: bool,
) -> Result<u8, Failure> {
    if !(interval.is_finite() && interval >= 0.1) {
        return Err(Failure::new(
            "bad_input",
            EXIT_BAD_INPUT,
            format!("--interval {interval} is not a number of seconds of at least 0.1"),
        ));
    }
    let terminal = std::io::stdout().is_terminal() && !json;
    loop {
        let view = live(paths, options);
        let text = if json {
            serde_json::to_string(&view).unwrap_or_default() + "\n"
        } else {
            draw(&view)
        };
        if terminal {
            // Home, then clear to the end of the screen: redrawn in place without flicker.
            out!("\x1b[H\x1b[J{text}");
        } else {
            out!("{text}\n");
        }
        let _ = std::io::stdout().flush();
        std::thread::sleep(Duration::from_secs_f64(interval));
    }
    #[allow(unreachable_code)]
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
