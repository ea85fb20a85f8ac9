//! `search`: full-text search over a store's sessions, or with `--transcripts` over agent
//! transcripts (docs/SEARCH.md).
//!
//! Without `--session`, each matching session once with its best event; with it, that
//! session's matching events. The index in `ROOT/.agentlog-search/` (transcripts: in the cache
//! directory) is built or caught up first. In the table the matches are bold and underlined when stdout is a terminal, and in
//! `[brackets]` otherwise, so piped output stays plain text.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::ValueEnum;
use serde::Serialize;

use agentlog::query::{EventFilter, SurfaceClass};
use agentlog::search::{
    EventSearchHit, EventSearchRequest, MatchMode, SearchConfig, SearchError, SearchIndex,
    SessionSearchRequest, TranscriptSearch, TranscriptSearchHit, TranscriptSearchRequest,
};

use super::sessions::{Surface, open};
use super::table::render;
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure, display, print_json};

/// `--match` values.
#[derive(Clone, Copy, Default, ValueEnum)]
pub enum Match {
    /// The whole query as one phrase (the default).
    #[default]
    Phrase,
    /// Every word of the query, in any order.
    All,
}

#[derive(clap::Args)]
#[command(
    override_usage = "agentlog search [OPTIONS] ROOT QUERY\n       agentlog search --transcripts [OPTIONS] QUERY [PATH]..."
)]
pub struct SearchArgs {
    /// The store directory (with --transcripts: the query).
    #[arg(value_name = "ROOT")]
    root: OsString,
    /// The text to find: one phrase, case and accents ignored (with --transcripts: transcript
    /// files or directories; default: the places the supported agents keep theirs).
    #[arg(value_name = "QUERY")]
    rest: Vec<OsString>,
    /// Search agent transcripts (every format `usage` reads) instead of a store.
    #[arg(long, conflicts_with_all = ["session", "types", "surface"])]
    transcripts: bool,
    /// With --transcripts: keep index files in DIR instead of the cache directory.
    #[arg(long, value_name = "DIR", requires = "transcripts")]
    index_dir: Option<PathBuf>,
    /// With --transcripts: leave out the archived transcripts whose files are gone.
    #[arg(long, requires = "transcripts")]
    no_archive: bool,
    /// Search the events of this session instead of ranking sessions.
    #[arg(long)]
    session: Option<String>,
    /// Only events of this type (repeat for several).
    #[arg(long = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// Only events of this surface class (repeat for several).
    #[arg(long, value_enum)]
    surface: Vec<Surface>,
    /// Hits per page (1 to 100, default 20).
    #[arg(long)]
    limit: Option<u64>,
    /// The next page: the cursor the previous page printed.
    #[arg(long)]
    cursor: Option<String>,
    /// How the query's words must occur.
    #[arg(long = "match", value_enum, default_value_t = Match::Phrase)]
    match_mode: Match,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl From<SearchError> for Failure {
    fn from(error: SearchError) -> Failure {
        let exit = if error.is_bad_request() {
            EXIT_BAD_INPUT
        } else {
            EXIT_FAILURE
        };
        Failure::new(error.code(), exit, error.to_string())
    }
}

fn event_filters(args: &SearchArgs) -> Vec<EventFilter> {
    let mut filters = Vec::new();
    if !args.types.is_empty() {
        filters.push(EventFilter::Type {
            values: args.types.clone(),
        });
    }
    if !args.surface.is_empty() {
        filters.push(EventFilter::Surface {
            values: args
                .surface
                .iter()
                .map(|s| SurfaceClass::from(*s))
                .collect(),
        });
    }
    filters
}

/// A command-line argument as text (a query must be valid Unicode).
fn text_arg(arg: &OsString) -> Result<String, Failure> {
    arg.to_str().map(str::to_owned).ok_or_else(|| {
        Failure::new(
            "invalid_query",
            EXIT_BAD_INPUT,
            "invalid query: the query is not valid UTF-8",
        )
    })
}

pub fn run(args: &SearchArgs) -> Result<u8, Failure> {
    let mode = match args.match_mode {
        Match::Phrase => MatchMode::Phrase,
        Match::All => MatchMode::All,
    };
    let highlight = Highlight::for_stdout();
    if args.transcripts {
        return run_transcripts(args, mode, highlight);
    }
    let [query] = args.rest.as_slice() else {
        return Err(Failure::new(
            "invalid_arguments",
            EXIT_BAD_INPUT,
            "a store search takes ROOT and QUERY (transcripts: --transcripts QUERY [PATH]...)",
        ));
    };
    let query = text_arg(query)?;
    let store = open(&PathBuf::from(&args.root))?;
    let mut index = SearchIndex::new(&store, SearchConfig::default());
    match &args.session {
        None => {
            let page = index.search_sessions(&SessionSearchRequest {
                query: query.clone(),
                session_filters: Vec::new(),
                event_filters: event_filters(args),
                limit: args.limit,
                cursor: args.cursor.clone(),
                mode,
            })?;
            let left_out = page
                .unreadable
                .iter()
                .map(|u| (format!("session {}", u.session_id), u.message.as_str()));
            let hits: Vec<&EventSearchHit> = page.hits.iter().map(|h| &h.best_match).collect();
            print_page(args.json, &page, left_out, || {
                print_hits(&hits, true, highlight, page.next_cursor.as_deref());
            })
        }
        Some(session) => {
            let page = index.search_events(&EventSearchRequest {
                session_id: session.clone(),
                query,
                filters: event_filters(args),
                limit: args.limit,
                cursor: args.cursor.clone(),
                mode,
            })?;
            let hits: Vec<&EventSearchHit> = page.hits.iter().collect();
            print_page(args.json, &page, std::iter::empty(), || {
                print_hits(&hits, false, highlight, page.next_cursor.as_deref());
            })
        }
    }
}

fn run_transcripts(
    args: &SearchArgs,
    mode: MatchMode,
    highlight: Highlight,
) -> Result<u8, Failure> {
    let query = text_arg(&args.root)?;
    let mut search = TranscriptSearch::new(args.index_dir.clone(), SearchConfig::default())?;
    let mut paths: Vec<PathBuf> = args.rest.iter().map(PathBuf::from).collect();
    let copies = archived_copies(args, &paths);
    if !copies.is_empty() {
        if paths.is_empty() {
            paths = agentlog::transcript::default_roots();
        }
        // A path given that is gone is searched through its copies.
        paths.retain(|p| p.exists());
        paths.extend(copies.iter().map(|c| c.copy.clone()));
    }
    let mut page = search.search(&TranscriptSearchRequest {
        query,
        paths,
        limit: args.limit,
        cursor: args.cursor.clone(),
        mode,
    })?;
    for hit in &mut page.hits {
        if let Some(c) = copies.iter().find(|c| c.copy == hit.file) {
            hit.file.clone_from(&c.original);
            hit.archived = Some(c.version);
        }
    }
    let left_out = page
        .unreadable
        .iter()
        .map(|u| (display(&u.file), u.message.as_str()));
    print_page(args.json, &page, left_out, || {
        print_transcript_hits(&page.hits, highlight, page.next_cursor.as_deref());
    })
}

/// A page as one JSON object; or what was left out (on stderr), then `table`.
fn print_page<'a, P: Serialize>(
    json: bool,
    page: &P,
    left_out: impl Iterator<Item = (String, &'a str)>,
    table: impl FnOnce(),
) -> Result<u8, Failure> {
    if json {
        print_json(page)?;
        return Ok(EXIT_OK);
    }
    for (what, message) in left_out {
        eprintln!("agentlog: {what} left out of the search: {message}");
    }
    table();
    Ok(EXIT_OK)
}

pub(super) fn print_transcript_hits(
    hits: &[TranscriptSearchHit],
    highlight: Highlight,
    next: Option<&str>,
) {
    let rows = hits
        .iter()
        .map(|hit| {
            let kind = match &hit.role {
                Some(role) if *role != hit.kind => format!("{}/{role}", hit.kind),
                _ => hit.kind.clone(),
            };
            vec![
                hit.session.clone(),
                hit.format.name().to_owned(),
                hit.line.to_string(),
                hit.generation.to_string(),
                kind,
            ]
        })
        .collect();
    let snippets = hits.iter().map(|h| highlight.mark(&h.snippet, &h.marks));
    print_table(
        &["session", "format", "line", "gen", "type"],
        rows,
        snippets,
        next,
    );
}

fn print_hits(
    hits: &[&EventSearchHit],
    with_session: bool,
    highlight: Highlight,
    next: Option<&str>,
) {
    let header: &[&str] = if with_session {
        &["session", "seq", "type", "surface"]
    } else {
        &["seq", "type", "surface"]
    };
    let rows = hits
        .iter()
        .map(|hit| {
            let surface = serde_json::to_value(hit.surface)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let row = [hit.seq.to_string(), hit.event_type.clone(), surface];
            with_session
                .then(|| hit.session_id.clone())
                .into_iter()
                .chain(row)
                .collect()
        })
        .collect();
    let snippets = hits.iter().map(|h| highlight.mark(&h.snippet, &h.marks));
    print_table(header, rows, snippets, next);
}

/// The hits as a table (`header` over `rows`, each row's marked snippet beside it), then the
/// cursor of the next page; `no match` when there are none.
fn print_table(
    header: &[&str],
    rows: Vec<Vec<String>>,
    snippets: impl Iterator<Item = String>,
    next: Option<&str>,
) {
    if rows.is_empty() {
        outln!("no match");
        return;
    }
    let rows: Vec<Vec<String>> = std::iter::once(super::table::header(header))
        .chain(rows)
        .collect();
    let table = render(&rows);
    let width = table.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let snippets = std::iter::once("match".to_owned()).chain(snippets);
    for (line, snippet) in table.lines().zip(snippets) {
        outln!("{line:<width$}  {snippet}");
    }
    if let Some(cursor) = next {
        outln!("next page: --cursor {cursor}");
    }
}

/// How matches are shown in the table.
#[derive(Clone, Copy)]
pub(super) enum Highlight {
    Ansi,
    Brackets,
}

impl Highlight {
    pub(super) fn for_stdout() -> Highlight {
        if std::io::stdout().is_terminal() {
            Highlight::Ansi
        } else {
            Highlight::Brackets
        }
    }

    fn mark(self, snippet: &str, marks: &[(usize, usize)]) -> String {
        let (open, close) = match self {
            Highlight::Ansi => ("\x1b[1;4m", "\x1b[0m"),
            Highlight::Brackets => ("[", "]"),
        };
        let mut out = String::with_capacity(snippet.len() + 16);
        let mut marks = marks.iter().peekable();
        for (i, c) in snippet.chars().enumerate() {
            if marks.peek().is_some_and(|(start, _)| *start == i) {
                out.push_str(open);
            }
            out.push(c);
            if marks.peek().is_some_and(|(_, end)| *end == i + 1) {
                out.push_str(close);
                marks.next();
            }
        }
        out
    }
}

/// The archived transcripts under the search's paths whose files are gone, copied to the
/// cache directory (none with --no-archive, or when the archive cannot be read).
fn archived_copies(args: &SearchArgs, paths: &[PathBuf]) -> Vec<agentlog::archive::ArchivedCopy> {
    if args.no_archive {
        return Vec::new();
    }
    super::cache::archived_copies(paths, args.index_dir.as_deref(), "searched")
}
