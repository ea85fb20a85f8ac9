//! The pages and their assets, embedded in the binary: four HTML pages (`/`,
//! `/sessions/{id}`, `/search`, `/usage`) that load this origin's scripts, which call the
//! API and build the page with DOM text nodes only. uPlot (MIT, its licence beside it in
//! `assets/vendor/`) draws the charts.
//!
//! The pages are one shell (`assets/shell.html`) filled in per page: its title, its script
//! `/assets/{name}.js` and `data-page`, and uPlot's tags (`assets/charts.html`) where it draws
//! charts. The Content Security Policy forbids inline script, so every script stays a file.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::State as Shared;

/// An embedded file: its address, its type and its bytes.
struct Asset {
    path: &'static str,
    kind: &'static str,
    body: &'static str,
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The asset of the file `assets/$name`, served at `/assets/$name`: one name for both, so the
/// address cannot drift from the file.
macro_rules! asset {
    ($name:literal, $kind:expr) => {
        Asset {
            path: concat!("/assets/", $name),
            kind: $kind,
            body: include_str!(concat!("assets/", $name)),
        }
    };
}

/// Every asset under `/assets/`.
const ASSETS: &[Asset] = &[
    asset!("common.js", JS),
    asset!("sessions.js", JS),
    asset!("session.js", JS),
    asset!("search.js", JS),
    asset!("usage.js", JS),
    asset!("style.css", CSS),
    asset!("vendor/uplot.min.js", JS),
    asset!("vendor/uplot.min.css", CSS),
];

/// A page: where it is served and what fills the shell.
struct Page {
    route: &'static str,
    /// Its `data-page` and the name of its script, `/assets/{name}.js`.
    name: &'static str,
    /// The title after `agentlog: `.
    title: &'static str,
    /// Whether it loads uPlot.
    charts: bool,
}

/// Every page.
const PAGES: &[Page] = &[
    Page {
        route: "/",
        name: "sessions",
        title: "Sessions",
        charts: false,
    },
    Page {
        route: "/sessions/{id}",
        name: "session",
        title: "Session",
        charts: true,
    },
    Page {
        route: "/search",
        name: "search",
        title: "Search",
        charts: false,
    },
    Page {
        route: "/usage",
        name: "usage",
        title: "Usage",
        charts: true,
    },
];

/// The HTML every page shares, with `{title}`, `{charts}` and `{page}` to fill in.
const SHELL: &str = include_str!("assets/shell.html");
/// uPlot's stylesheet and script, for the pages that draw charts.
const CHARTS: &str = include_str!("assets/charts.html");

/// The HTML of `page`.
fn render(page: &Page) -> String {
    SHELL
        .replace("{title}", page.title)
        .replace("{charts}", if page.charts { CHARTS } else { "" })
        .replace("{page}", page.name)
}

/// An answer of an embedded file.
fn serve(kind: &'static str, body: impl IntoResponse) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The pages' and assets' routes.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    let mut router = Router::new();
    for page in PAGES {
        // Filled in once; each answer shares the bytes.
        let html = Bytes::from(render(page));
        router = router.route(
            page.route,
            get(move || async move { serve(HTML, html.clone()) }),
        );
    }
    // Browsers ask for an icon: none, rather than a 404 in every page's console.
    router = router.route(
        "/favicon.ico",
        get(|| async { axum::http::StatusCode::NO_CONTENT }),
    );
    for asset in ASSETS {
        let (kind, body) = (asset.kind, asset.body);
        router = router.route(asset.path, get(move || async move { serve(kind, body) }));
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The addresses `src="..."` and `href="..."` name in `html`.
    fn references(html: &str) -> Vec<&str> {
        let mut found = Vec::new();
        for attribute in ["src=\"", "href=\""] {
            for (at, _) in html.match_indices(attribute) {
                let rest = &html[at + attribute.len()..];
                found.extend(rest.split('"').next());
            }
        }
        found
    }

    #[test]
    fn every_page_is_filled_in_and_loads_only_embedded_files() {
        for page in PAGES {
            let html = render(page);
            assert!(!html.contains("{title}") && !html.contains("{charts}"));
            assert!(!html.contains("{page}"), "{}", page.name);
            assert!(html.contains(&format!("<title>agentlog: {}</title>", page.title)));
            assert!(html.contains(&format!("<body data-page=\"{}\">", page.name)));
            // No inline script: the Content Security Policy would refuse it.
            assert!(!html.contains("<script>"), "{}", page.name);
            let loaded = references(&html);
            let script = format!("/assets/{}.js", page.name);
            assert!(loaded.contains(&script.as_str()), "{}", page.name);
            assert_eq!(
                loaded.contains(&"/assets/vendor/uplot.min.js"),
                page.charts,
                "{}",
                page.name
            );
            for address in loaded {
                assert!(
                    ASSETS.iter().any(|a| a.path == address),
                    "{} loads {address}, which is not embedded",
                    page.name
                );
            }
        }
    }
}
