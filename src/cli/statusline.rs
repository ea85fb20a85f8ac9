//! `agentlog statusline`: one line for Claude Code's `statusLine` setting, from the JSON it
//! passes on stdin, or for any agent's transcript with `--transcript FILE` (the figures:
//! `transcript::statusline`).

use std::io::Read;
use std::path::PathBuf;

use agentlog::transcript::{
    MAX_STATUS_INPUT, StatusInput, StatusOptions, parse_status_input, parse_timezone, statusline,
};

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure, print_json};

/// The arguments of `agentlog statusline`.
#[derive(clap::Args)]
pub struct Args {
    /// Keep index files in DIR instead of the cache directory.
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    /// The line to print: fields of the `--json` output by name in braces, e.g.
    /// `'{model} {context_percent}% {session_cost_usd}'`.
    #[arg(long, value_name = "TEMPLATE")]
    format: Option<String>,
    /// A price file in `LiteLLM`'s format, used instead of the embedded table.
    #[arg(long, value_name = "FILE")]
    pricing: Option<PathBuf>,
    /// The zone whose day "today" is (IANA name; default: the system's, as `usage`).
    #[arg(long, value_name = "TZ")]
    timezone: Option<String>,
    /// Read this transcript (any agent's line format) instead of Claude Code's JSON on stdin:
    /// for agents without a status-line hook (a shell prompt, a tmux status bar).
    #[arg(long, value_name = "FILE")]
    transcript: Option<PathBuf>,
    /// Print the figures as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let input = if let Some(path) = &args.transcript {
        StatusInput {
            transcript_path: path.clone(),
            ..StatusInput::default()
        }
    } else {
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(MAX_STATUS_INPUT as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                Failure::new("io_error", EXIT_FAILURE, format!("cannot read stdin: {e}"))
            })?;
        parse_status_input(&bytes)
            .map_err(|e| Failure::new("bad_input", EXIT_BAD_INPUT, e.to_string()))?
    };
    let options =
        StatusOptions {
            index_dir: args.index_dir.clone(),
            now: None,
            timezone: Some(parse_timezone(args.timezone.as_deref()).map_err(|e| {
                Failure::new("bad_input", EXIT_BAD_INPUT, format!("--timezone {e}"))
            })?),
            prices: args
                .pricing
                .as_ref()
                .map(|p| super::pricing::table(Some(p)))
                .transpose()?,
        };
    let line = statusline(&input, &options)?;
    if args.json {
        print_json(&line)?;
    } else if let Some(template) = &args.format {
        outln!("{}", line.format(template));
    } else {
        outln!("{}", line.line());
    }
    Ok(EXIT_OK)
}
