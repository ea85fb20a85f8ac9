//! `agentlog archive`: keep every transcript line in the archive; list, verify and restore it.

use std::path::PathBuf;

use agentlog::archive::{
    Archive, ArchiveError, ArchiveOptions, RestoreOptions, archive, default_archive_dir, restore,
    verify,
};

use super::progress::FilesBar;
use super::table::{header, render, thousands};
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure, display, print_json};

/// The arguments of `agentlog archive`: its modes are flags, as the issue spells them.
#[derive(clap::Args)]
#[expect(clippy::struct_excessive_bools, reason = "each is a command-line flag")]
pub struct Args {
    /// Transcript files or directories to search for `*.jsonl` (default: the places Claude
    /// Code, Codex and pi keep theirs).
    paths: Vec<PathBuf>,
    /// List the archived sources instead: path, agent, session, bytes, times, versions, and
    /// whether the original still exists.
    #[arg(long, conflicts_with_all = ["verify", "restore"])]
    list: bool,
    /// Read every frame and check every checksum and the index instead.
    #[arg(long, conflicts_with = "restore")]
    verify: bool,
    /// Write a session's archived files back (a session id, or an original path); never over
    /// an existing file.
    #[arg(long, value_name = "SESSION_ID|PATH")]
    restore: Option<String>,
    /// With --restore: version N (as --list numbers them) instead of the latest.
    #[arg(long, value_name = "N", requires = "restore")]
    version: Option<u32>,
    /// With --restore: write under DIR (the files' layout kept) instead of the original paths.
    #[arg(long, value_name = "DIR", requires = "restore")]
    to: Option<PathBuf>,
    /// Print nothing but errors (for hooks and timers).
    #[arg(long, short)]
    quiet: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl From<ArchiveError> for Failure {
    fn from(error: ArchiveError) -> Failure {
        let message = error.to_string();
        match error {
            ArchiveError::Exists { path } => {
                Failure::new("exists", EXIT_FAILURE, message).with_path(&path)
            }
            ArchiveError::NoMatch { .. } => Failure::new("no_match", EXIT_BAD_INPUT, message),
            ArchiveError::Locked { .. } => Failure::new("locked", EXIT_FAILURE, message),
            ArchiveError::Incomplete { .. } => Failure::new("damaged", EXIT_FAILURE, message),
            _ => Failure::new("archive_error", EXIT_FAILURE, message),
        }
    }
}

/// Runs the command.
pub fn run(args: &Args) -> Result<u8, Failure> {
    if args.list {
        return list(args);
    }
    if args.verify {
        return check(args);
    }
    if let Some(what) = &args.restore {
        let archive = Archive::open(&default_archive_dir()?)?;
        let options = RestoreOptions {
            version: args.version,
            to: args.to.clone(),
        };
        let restored = restore(&archive, what, &options)?;
        if args.json {
            print_json(&restored)?;
        } else if !args.quiet {
            for f in &restored.files {
                outln!(
                    "restored {} (version {}, {} bytes)",
                    display(&f.path),
                    f.version,
                    thousands(f.bytes)
                );
            }
        }
        return Ok(EXIT_OK);
    }
    let bar = FilesBar::new("archiving transcripts", !args.quiet);
    let report = archive(&args.paths, &ArchiveOptions::default(), &|done, total| {
        bar.update(done, total);
    });
    bar.finish();
    let report = report?;
    if args.json {
        print_json(&report)?;
    } else if !args.quiet {
        outln!(
            "archived {} lines ({} bytes, {} on disk) from {} transcripts: {} new, {} appended, {} rewritten (new version), {} unchanged",
            thousands(report.lines),
            thousands(report.bytes),
            thousands(report.compressed_bytes),
            report.files,
            report.new_sources,
            report.appended,
            report.new_versions,
            report.unchanged
        );
    }
    for s in &report.skipped {
        eprintln!("agentlog: skipped {}: {}", display(&s.path), s.error);
    }
    Ok(EXIT_OK)
}

fn list(args: &Args) -> Result<u8, Failure> {
    let listing = Archive::open(&default_archive_dir()?)?.list();
    if args.json {
        print_json(&listing)?;
        return Ok(EXIT_OK);
    }
    let mut rows = vec![header(&[
        "path", "agent", "session", "bytes", "first", "last", "versions", "original",
    ])];
    for s in &listing.sources {
        rows.push(vec![
            display(&s.path),
            s.agent.clone(),
            s.session.clone(),
            thousands(s.bytes),
            s.first_time.clone().unwrap_or_default(),
            s.last_time.clone().unwrap_or_default(),
            s.versions.len().to_string(),
            if s.original_exists { "present" } else { "gone" }.to_owned(),
        ]);
    }
    out!("{}", render(&rows));
    outln!(
        "{} sources in {}",
        listing.sources.len(),
        display(&listing.archive)
    );
    Ok(EXIT_OK)
}

fn check(args: &Args) -> Result<u8, Failure> {
    let report = verify(&default_archive_dir()?)?;
    if args.json {
        print_json(&report)?;
    } else {
        for d in &report.damaged_records {
            outln!("damaged index bytes at {} ({} bytes)", d.offset, d.len);
        }
        for d in &report.damaged_frames {
            outln!(
                "damaged: {} version {} bytes {}..{}{}: {}",
                display(&d.path),
                d.version,
                d.start,
                d.end,
                d.frame_offset
                    .map(|o| format!(" (frame at {o})"))
                    .unwrap_or_default(),
                d.what
            );
        }
        outln!(
            "{}: {} sources, {} versions, {} frames, {} bytes{}",
            if report.ok { "ok" } else { "DAMAGED" },
            report.sources,
            report.versions,
            report.records,
            thousands(report.bytes),
            if report.torn_index_bytes + report.unnamed_frame_bytes > 0 {
                format!(
                    "; {} bytes left by an interrupted run (the next run removes them)",
                    report.torn_index_bytes + report.unnamed_frame_bytes
                )
            } else {
                String::new()
            }
        );
    }
    Ok(if report.ok { EXIT_OK } else { EXIT_FAILURE })
}
