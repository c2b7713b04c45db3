//! The router: every route behind one guard (the `Host` header on loopback, the token
//! elsewhere), every answer with a content security policy that lets no script run.

use crate::error::ViewError;
use crate::state::{watch, AppState};
use crate::{detail, pages, rate};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The cookie a token given in the address is kept in.
const COOKIE: &str = "cb_view_token";

/// No script, no frame, no outside resource; forms post only here.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

impl IntoResponse for ViewError {
    fn into_response(self) -> Response {
        let status = match &self {
            ViewError::NotFound(_) => StatusCode::NOT_FOUND,
            ViewError::BadRequest(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::warn!(error = %self, "a page failed");
        }
        let body = self.to_string();
        (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response()
    }
}

/// Compares in time independent of where the strings differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |x, (p, q)| x | (p ^ q)) == 0
}

/// The token a request carries: `?token=`, the cookie, or `Authorization: Bearer`.
fn token_of(req: &Request) -> (Option<String>, bool) {
    let query = req.uri().query().unwrap_or("");
    let from_query = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(str::to_owned);
    if from_query.is_some() {
        return (from_query, true);
    }
    let headers = req.headers();
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_owned)
        });
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    (cookie.or(bearer), false)
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        why.to_owned(),
    )
        .into_response()
}

async fn guard(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(hosts) = &s.settings.hosts {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return refuse(
                StatusCode::FORBIDDEN,
                "this viewer answers only its loopback address",
            );
        }
    }
    let mut set_cookie = None;
    if let Some(token) = &s.settings.token {
        let (given, in_query) = token_of(&req);
        if !given.as_deref().is_some_and(|g| same(g, token)) {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "this viewer needs its token: open the address it printed (…/?token=…)",
            );
        }
        if in_query {
            set_cookie = Some(format!(
                "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
            ));
        }
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::SET_COOKIE, c);
    }
    resp
}

/// Every route of the viewer, guarded.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(pages::overview))
        .route("/rows", get(pages::rows))
        .route("/row/{n}", get(detail::row))
        .route("/rejects", get(detail::rejects))
        .route("/reject/{d}/{i}", get(detail::reject))
        .route("/live", get(detail::live_page))
        .route("/rate", get(rate::rate_page).post(rate::rate_post))
        .route("/agreement", get(rate::agreement_page))
        .route("/export", get(rate::export))
        .fallback(|| async { refuse(StatusCode::NOT_FOUND, "no such page") })
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` resolves, reading the files again when
/// they change.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let watcher = tokio::spawn(watch(state.clone()));
    let r = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await;
    watcher.abort();
    r
}

/// A fresh random token (32 hexadecimal digits) for a viewer bound beyond loopback.
pub fn new_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..16)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}
