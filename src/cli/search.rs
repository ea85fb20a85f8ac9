//! `search`: full-text search over a store's sessions (docs/SEARCH.md).
//!
//! Without `--session`, each matching session once with its best event; with it, that
//! session's matching events. The index in `ROOT/.agentlog-search/` is built or caught up
//! first. In the table the matches are bold and underlined when stdout is a terminal, and in
//! `[brackets]` otherwise, so piped output stays plain text.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::ValueEnum;

use agentlog::query::{EventFilter, SurfaceClass};
use agentlog::search::{
    EventSearchHit, EventSearchRequest, MatchMode, SearchConfig, SearchError, SearchIndex,
    SessionSearchRequest,
};

use super::sessions::{Surface, open};
use super::table::render;
use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Failure, print_json};

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
pub struct SearchArgs {
    /// The store directory.
    root: PathBuf,
    /// The text to find: one phrase, case and accents ignored.
    query: String,
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

pub fn run(args: &SearchArgs) -> Result<u8, Failure> {
    let store = open(&args.root)?;
    let mut index = SearchIndex::new(&store, SearchConfig::default());
    let mode = match args.match_mode {
        Match::Phrase => MatchMode::Phrase,
        Match::All => MatchMode::All,
    };
    let highlight = Highlight::for_stdout();
    match &args.session {
        None => {
            let page = index.search_sessions(&SessionSearchRequest {
                query: args.query.clone(),
                session_filters: Vec::new(),
                event_filters: event_filters(args),
                limit: args.limit,
                cursor: args.cursor.clone(),
                mode,
            })?;
            if args.json {
                print_json(&page)?;
                return Ok(EXIT_OK);
            }
            for u in &page.unreadable {
                eprintln!(
                    "agentlog: session {} left out of the search: {}",
                    u.session_id, u.message
                );
            }
            let hits: Vec<&EventSearchHit> = page.hits.iter().map(|h| &h.best_match).collect();
            print_table(&hits, true, highlight);
            print_next(page.next_cursor.as_deref());
        }
        Some(session) => {
            let page = index.search_events(&EventSearchRequest {
                session_id: session.clone(),
                query: args.query.clone(),
                filters: event_filters(args),
                limit: args.limit,
                cursor: args.cursor.clone(),
                mode,
            })?;
            if args.json {
                print_json(&page)?;
                return Ok(EXIT_OK);
            }
            let hits: Vec<&EventSearchHit> = page.hits.iter().collect();
            print_table(&hits, false, highlight);
            print_next(page.next_cursor.as_deref());
        }
    }
    Ok(EXIT_OK)
}

/// How matches are shown in the table.
#[derive(Clone, Copy)]
enum Highlight {
    Ansi,
    Brackets,
}

impl Highlight {
    fn for_stdout() -> Highlight {
        if std::io::stdout().is_terminal() {
            Highlight::Ansi
        } else {
            Highlight::Brackets
        }
    }

    fn apply(self, hit: &EventSearchHit) -> String {
        let (open, close) = match self {
            Highlight::Ansi => ("\x1b[1;4m", "\x1b[0m"),
            Highlight::Brackets => ("[", "]"),
        };
        let mut out = String::with_capacity(hit.snippet.len() + 16);
        let mut marks = hit.marks.iter().peekable();
        for (i, c) in hit.snippet.chars().enumerate() {
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

fn print_table(hits: &[&EventSearchHit], with_session: bool, highlight: Highlight) {
    if hits.is_empty() {
        println!("no match");
        return;
    }
    let mut rows = vec![Vec::new()];
    if with_session {
        rows[0].push("session".to_owned());
    }
    rows[0].extend(["seq", "type", "surface"].map(String::from));
    for hit in hits {
        let mut row = Vec::new();
        if with_session {
            row.push(hit.session_id.clone());
        }
        let surface = serde_json::to_value(hit.surface)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        row.extend([hit.seq.to_string(), hit.event_type.clone(), surface]);
        rows.push(row);
    }
    let table = render(&rows);
    let width = table.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let snippets =
        std::iter::once("match".to_owned()).chain(hits.iter().map(|h| highlight.apply(h)));
    for (line, snippet) in table.lines().zip(snippets) {
        println!("{line:<width$}  {snippet}");
    }
}

fn print_next(cursor: Option<&str>) {
    if let Some(cursor) = cursor {
        println!("next page: --cursor {cursor}");
    }
}
