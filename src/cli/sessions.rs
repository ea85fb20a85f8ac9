//! Session stores: `sessions`, `events`, `read`, `trace-session`, `trace-event`.
//!
//! A store is a directory of sessions, `ROOT/<session-id>/events.jsonl`. These commands read
//! it (through each session's index); they never write events.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use agentlog::query::{
    LineageResolution, QueryConfig, QueryError, QueryService, SessionLineageNode, Store,
    StoreConfig, SurfaceClass, WindowRequest, select_events, session_summary_json,
};

use super::table::{header, render};
use super::{EXIT_FAILURE, EXIT_NO_LOG, EXIT_OK, Failure, print_json, stdout_failure, stream_json};

/// `--surface` values.
#[derive(Clone, Copy, ValueEnum)]
pub enum Surface {
    /// On the model's current surface.
    Current,
    /// Was on the surface, replaced since.
    Shadowed,
    /// Never on the surface (not a message event).
    LogOnly,
}

impl From<Surface> for SurfaceClass {
    fn from(s: Surface) -> SurfaceClass {
        match s {
            Surface::Current => SurfaceClass::Current,
            Surface::Shadowed => SurfaceClass::Shadowed,
            Surface::LogOnly => SurfaceClass::LogOnly,
        }
    }
}

#[derive(clap::Args)]
pub struct SessionsArgs {
    /// The store directory.
    root: PathBuf,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct EventsArgs {
    /// The store directory.
    root: PathBuf,
    /// The session id.
    session: String,
    /// Only events of this type (repeat for several).
    #[arg(long = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// Only events of this surface class.
    #[arg(long, value_enum)]
    surface: Option<Surface>,
    /// Only events whose text contains this, ignoring case and whitespace width.
    #[arg(long)]
    text: Option<String>,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct ReadArgs {
    /// The store directory.
    root: PathBuf,
    /// The session id.
    session: String,
    /// The event's seq.
    seq: u64,
    /// Neighbours before it.
    #[arg(long, default_value_t = 0)]
    before: u64,
    /// Neighbours after it.
    #[arg(long, default_value_t = 0)]
    after: u64,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct TraceSessionArgs {
    /// The store directory.
    root: PathBuf,
    /// The session id.
    session: String,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct TraceEventArgs {
    /// The store directory.
    root: PathBuf,
    /// The session id.
    session: String,
    /// The event's seq.
    seq: u64,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl From<QueryError> for Failure {
    fn from(error: QueryError) -> Failure {
        Failure::new(error.code(), EXIT_FAILURE, error.to_string())
    }
}

/// Opens a store for reading; a missing directory is an error, not a new store.
pub(super) fn open(root: &Path) -> Result<Store, Failure> {
    if !root.is_dir() {
        return Err(Failure::new(
            "no_store",
            EXIT_NO_LOG,
            format!("{} is not a session store directory", root.display()),
        )
        .with_path(root));
    }
    Ok(Store::open(root, StoreConfig::default())?)
}

fn service(store: &Store) -> Result<QueryService<'_>, Failure> {
    Ok(QueryService::new(store, QueryConfig::default())?)
}

pub fn sessions(args: &SessionsArgs) -> Result<u8, Failure> {
    let store = open(&args.root)?;
    let records = service(&store)?.list_sessions()?;
    if args.json {
        print_json(&records.iter().map(session_summary_json).collect::<Vec<_>>())?;
        return Ok(EXIT_OK);
    }
    let mut rows = vec![header(&["id", "createdAt", "parent", "persisted"])];
    for r in &records {
        rows.push(vec![
            r.header.id.clone(),
            r.header.created_at.to_string(),
            r.header
                .parent_session
                .clone()
                .unwrap_or_else(|| "-".to_owned()),
            r.persisted.to_string(),
        ]);
    }
    out!("{}", render(&rows));
    Ok(EXIT_OK)
}

pub fn events(args: &EventsArgs) -> Result<u8, Failure> {
    let store = open(&args.root)?;
    let service = service(&store)?;
    let records = select_events(
        &service,
        &args.session,
        &args.types,
        args.surface.map(SurfaceClass::from),
        args.text.as_deref(),
    )?;
    if args.json {
        print_json(&records)?;
        return Ok(EXIT_OK);
    }
    let mut rows = vec![header(&["seq", "type", "time", "surface"])];
    for r in &records {
        let surface = serde_json::to_value(r.surface)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        rows.push(vec![
            r.seq.to_string(),
            r.event_type.clone(),
            r.time.to_string(),
            surface,
        ]);
    }
    out!("{}", render(&rows));
    Ok(EXIT_OK)
}

pub fn read(args: &ReadArgs) -> Result<u8, Failure> {
    let store = open(&args.root)?;
    let request =
        WindowRequest::new(&args.session, args.seq).with_neighbours(args.before, args.after);
    let window = service(&store)?.read_event(&request)?;
    if args.json {
        print_json(&window)?;
        return Ok(EXIT_OK);
    }
    for event in &window.events {
        let marker = if event.seq == window.target.seq {
            ">"
        } else {
            " "
        };
        let line = serde_json::to_string(event).unwrap_or_default();
        outln!("{marker} {line}");
    }
    Ok(EXIT_OK)
}

/// How many levels of descendants the human output indents; deeper ones say their depth
/// instead, so a long chain does not print a quadratic amount of indentation.
const MAX_INDENT: usize = 16;

pub fn trace_session(args: &TraceSessionArgs) -> Result<u8, Failure> {
    let store = open(&args.root)?;
    let trace = service(&store)?.trace_session(&args.session)?;
    if args.json {
        // The library writes the tree with an explicit stack: a chain can be thousands deep.
        stream_json(|out| trace.write_json(out))?;
        return Ok(EXIT_OK);
    }
    let chain: Vec<&str> = trace
        .ancestors
        .iter()
        .rev()
        .map(|a| a.header.id.as_str())
        .collect();
    outln!("session   {}", trace.target.header.id);
    outln!(
        "ancestors {}",
        if chain.is_empty() {
            "-".to_owned()
        } else {
            chain.join(" > ")
        }
    );
    match &trace.resolution {
        LineageResolution::Complete { root } => outln!("root      {}", root.header.id),
        LineageResolution::Unresolved {
            unresolved_parent_id,
        } => outln!("root      unresolved: parent {unresolved_parent_id} is not in the store"),
    }
    // Depth first, children in order, with a stack of sibling iterators (no recursion).
    let mut lines = Vec::new();
    let mut stack: Vec<std::slice::Iter<'_, SessionLineageNode>> = vec![trace.descendants.iter()];
    while let Some(level) = stack.last_mut() {
        let Some(node) = level.next() else {
            stack.pop();
            continue;
        };
        let depth = stack.len();
        let indent = "  ".repeat(depth.min(MAX_INDENT));
        let id = &node.session.header.id;
        lines.push(if depth > MAX_INDENT {
            format!("{indent}[depth {depth}] {id}")
        } else {
            format!("{indent}{id}")
        });
        stack.push(node.descendants.iter());
    }
    outln!("descendants {}", lines.len());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in &lines {
        writeln!(out, "{line}").map_err(|e| stdout_failure(&e))?;
    }
    out.flush().map_err(|e| stdout_failure(&e))?;
    Ok(EXIT_OK)
}

pub fn trace_event(args: &TraceEventArgs) -> Result<u8, Failure> {
    let store = open(&args.root)?;
    let trace = service(&store)?.trace_event(&args.session, args.seq)?;
    if args.json {
        print_json(&trace)?;
        return Ok(EXIT_OK);
    }
    let list = |seqs: &[u64]| {
        if seqs.is_empty() {
            "-".to_owned()
        } else {
            seqs.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    outln!(
        "event              {} {}",
        trace.target.seq,
        trace.target.event_type
    );
    outln!(
        "replaced by        {}",
        trace.replaced_by.map_or("-".to_owned(), |s| s.to_string())
    );
    outln!("replacement chain  {}", list(&trace.replacement_chain));
    outln!("replaces           {}", list(&trace.replaced_event_seqs));
    outln!("cites              {}", list(&trace.source_event_seqs));
    outln!("cited by           {}", list(&trace.derived_event_seqs));
    Ok(EXIT_OK)
}
