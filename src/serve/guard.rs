//! What every request passes before any handler runs, in this order: the method (GET and HEAD
//! only, else 405), the `Host` header (the bound address or `localhost` with the port, else
//! 403: a page of another site that rebinds its name to 127.0.0.1 sends its own name), and
//! the per-run token (else 401). And the headers every answer carries: a Content Security
//! Policy allowing only this origin's scripts, styles and requests, and no framing, sniffing
//! or referrer.
//!
//! The token arrives as `?token=` (a page's address then sets an `HttpOnly`, `SameSite=Strict`
//! cookie and redirects to itself without it, so the token leaves the address bar), as that
//! cookie, or as `Authorization: Bearer` for scripts.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The policy: this origin only, no inline script or style, no frames, no forms elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// Bytes of randomness in a token (hex-encoded: twice as many characters).
const TOKEN_BYTES: usize = 24;

/// A fresh random token, from the operating system's source.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// What a request must match.
#[derive(Debug)]
pub struct Guard {
    /// `Host` values accepted.
    hosts: Vec<String>,
    /// The token.
    token: String,
    /// The cookie's name: one per port, since cookies do not tell ports apart.
    cookie: String,
}

impl Guard {
    /// The guard of a viewer bound to `host:port` with `token`.
    pub fn new(host: IpAddr, port: u16, token: String) -> Guard {
        let mut hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")];
        let bound = match host {
            IpAddr::V6(ip) => format!("[{ip}]:{port}"),
            IpAddr::V4(ip) => format!("{ip}:{port}"),
        };
        if !host.is_unspecified() && !hosts.contains(&bound) {
            hosts.push(bound);
        }
        Guard {
            hosts,
            token,
            cookie: format!("agentlog_token_{port}"),
        }
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        host.is_some_and(|h| self.hosts.iter().any(|a| a.eq_ignore_ascii_case(h)))
    }

    fn matches(&self, given: &str) -> bool {
        constant_time_eq(given.as_bytes(), self.token.as_bytes())
    }

    fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == self.cookie && self.matches(value))
    }

    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| self.matches(t.trim()))
    }
}

/// Equal bytes, compared in a time that does not depend on where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The query without its `token` parameter, and that token if there was one.
fn split_token(query: Option<&str>) -> (Option<String>, String) {
    let mut token = None;
    let mut rest = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("token=") {
            Some(t) => token = Some(t.to_owned()),
            None => rest.push(pair),
        }
    }
    (token, rest.join("&"))
}

/// A plain-text refusal.
fn refuse(status: StatusCode, why: &'static str) -> Response {
    (status, why).into_response()
}

/// The middleware: refuses what must be refused, sets the cookie, and puts the security
/// headers on every answer.
pub async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let mut response = admit(&guard, request, next).await;
    let headers = response.headers_mut();
    let fixed = [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (
            header::HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
        (
            header::HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    for (name, value) in fixed {
        headers.insert(name, value);
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn admit(guard: &Guard, request: Request, next: Next) -> Response {
    let method = request.method();
    if method != Method::GET && method != Method::HEAD {
        let mut response = refuse(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    if !guard.host_ok(request.headers()) {
        return refuse(StatusCode::FORBIDDEN, "unexpected Host header\n");
    }
    let (token, rest) = split_token(request.uri().query());
    match token {
        Some(t) if guard.matches(&t) => {
            let cookie = format!(
                "{}={}; HttpOnly; SameSite=Strict; Path=/",
                guard.cookie, guard.token
            );
            let path = request.uri().path();
            // A page's address drops the token (history, bookmarks); a script's call goes on.
            let mut response = if path.starts_with("/api/") {
                next.run(request).await
            } else {
                let to = if rest.is_empty() {
                    path.to_owned()
                } else {
                    format!("{path}?{rest}")
                };
                Response::builder()
                    .status(StatusCode::SEE_OTHER)
                    .header(header::LOCATION, to)
                    .body(Body::empty())
                    .unwrap_or_default()
            };
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
            response
        }
        Some(_) => refuse(StatusCode::UNAUTHORIZED, "wrong token\n"),
        None if guard.cookie_ok(request.headers()) || guard.bearer_ok(request.headers()) => {
            next.run(request).await
        }
        None => refuse(
            StatusCode::UNAUTHORIZED,
            "open the address agentlog serve printed (it carries the access token)\n",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_and_long() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn the_token_is_taken_out_of_the_query() {
        assert_eq!(
            split_token(Some("a=1&token=xyz&b=2")),
            (Some("xyz".to_owned()), "a=1&b=2".to_owned())
        );
        assert_eq!(split_token(None), (None, String::new()));
    }

    #[test]
    fn comparison_needs_every_byte() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn hosts_are_the_loopback_names_with_the_port() {
        let guard = Guard::new(IpAddr::from([127, 0, 0, 1]), 8080, "t".into());
        let mut headers = HeaderMap::new();
        for (host, ok) in [
            ("127.0.0.1:8080", true),
            ("localhost:8080", true),
            ("LOCALHOST:8080", true),
            ("localhost", false),
            ("127.0.0.1:8081", false),
            ("evil.example:8080", false),
        ] {
            headers.insert(header::HOST, HeaderValue::from_static(host));
            assert_eq!(guard.host_ok(&headers), ok, "{host}");
        }
        headers.remove(header::HOST);
        assert!(!guard.host_ok(&headers));
    }
}
