//! The pages and their assets, embedded in the binary: four HTML shells (`/`,
//! `/sessions/{id}`, `/search`, `/usage`) that load this origin's scripts, which call the
//! API and build the page with DOM text nodes only. uPlot (MIT, its licence beside it in
//! `assets/vendor/`) draws the charts.

use std::sync::Arc;

use axum::Router;
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

/// Every asset under `/assets/`.
const ASSETS: &[Asset] = &[
    Asset {
        path: "/assets/common.js",
        kind: JS,
        body: include_str!("assets/common.js"),
    },
    Asset {
        path: "/assets/sessions.js",
        kind: JS,
        body: include_str!("assets/sessions.js"),
    },
    Asset {
        path: "/assets/session.js",
        kind: JS,
        body: include_str!("assets/session.js"),
    },
    Asset {
        path: "/assets/search.js",
        kind: JS,
        body: include_str!("assets/search.js"),
    },
    Asset {
        path: "/assets/usage.js",
        kind: JS,
        body: include_str!("assets/usage.js"),
    },
    Asset {
        path: "/assets/style.css",
        kind: CSS,
        body: include_str!("assets/style.css"),
    },
    Asset {
        path: "/assets/vendor/uplot.min.js",
        kind: JS,
        body: include_str!("assets/vendor/uplot.min.js"),
    },
    Asset {
        path: "/assets/vendor/uplot.min.css",
        kind: CSS,
        body: include_str!("assets/vendor/uplot.min.css"),
    },
];

/// An answer of an embedded file.
fn serve(kind: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The pages' and assets' routes.
pub(crate) fn routes() -> Router<Arc<Shared>> {
    let mut router = Router::new()
        .route(
            "/",
            get(|| async { serve(HTML, include_str!("assets/index.html")) }),
        )
        .route(
            "/sessions/{id}",
            get(|| async { serve(HTML, include_str!("assets/session.html")) }),
        )
        .route(
            "/search",
            get(|| async { serve(HTML, include_str!("assets/search.html")) }),
        )
        .route(
            "/usage",
            get(|| async { serve(HTML, include_str!("assets/usage.html")) }),
        );
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
