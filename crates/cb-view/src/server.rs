//! The router: every route behind one guard (the `Host` header on loopback, the token
//! elsewhere, the origin of a post everywhere), every answer, refusals included, with the
//! same headers: a content security policy that lets no script run, no framing, no sniffing.

use crate::error::ViewError;
use crate::secret::same_secret;
use crate::state::{watch, AppState};
use crate::{detail, pages, rate};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
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
            ViewError::Forbidden(_) => StatusCode::FORBIDDEN,
            ViewError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
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

/// The token a request carries: `?token=`, the cookie, or `Authorization: Bearer`; and
/// whether it came in the address.
fn token_of(req: &Request) -> (Option<String>, bool) {
    let query = req.uri().query().unwrap_or("");
    let from_query = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned());
    if from_query.is_some() {
        return (from_query, true);
    }
    let headers = req.headers();
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .flatten()
        .find(|c| c.name() == COOKIE)
        .map(|c| c.value().to_owned());
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

/// Why a request that writes (a POST) did not come from one of the viewer's own pages, if it
/// did not: the browser's `Sec-Fetch-Site` must say `same-origin` and its `Origin` must be
/// the address the request was sent to (clients that send neither, as scripts do, are left
/// to the form token).
fn foreign_post(req: &Request) -> Option<String> {
    let headers = req.headers();
    let text = |name| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    if let Some(site) = text("sec-fetch-site").filter(|s| *s != "same-origin") {
        return Some(format!(
            "refused: this form was sent from another site's page (Sec-Fetch-Site: {site}); the viewer takes ratings only from its own pages, and nothing was stored"
        ));
    }
    let host = text(header::HOST.as_str()).unwrap_or("");
    match text(header::ORIGIN.as_str()) {
        Some(origin) if origin != format!("http://{host}") => Some(format!(
            "refused: this form was sent from a page of {origin}, not of http://{host}; the viewer takes ratings only from its own pages, and nothing was stored"
        )),
        _ => None,
    }
}

/// Why `req` is refused, if it is: the host on loopback, the token beyond it, the origin of
/// a post.
fn refusal(s: &AppState, req: &Request) -> Option<Response> {
    if let Some(hosts) = &s.settings.hosts {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Some(refuse(
                StatusCode::FORBIDDEN,
                "this viewer answers only its loopback address",
            ));
        }
    }
    if let Some(token) = &s.settings.token {
        let (given, _) = token_of(req);
        if !given.as_deref().is_some_and(|g| same_secret(g, token)) {
            return Some(refuse(
                StatusCode::UNAUTHORIZED,
                "this viewer needs its token: open the address it printed (…/?token=…)",
            ));
        }
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        if let Some(why) = foreign_post(req) {
            return Some(refuse(StatusCode::FORBIDDEN, &why));
        }
    }
    None
}

/// Guards every route and gives every answer, refusals included, the same headers.
async fn guard(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let mut set_cookie = None;
    let mut resp = match refusal(&s, &req) {
        Some(refused) => refused,
        None => {
            if let (Some(token), (_, true)) = (&s.settings.token, token_of(&req)) {
                let c = cookie::Cookie::build((COOKIE, token.clone()))
                    .http_only(true)
                    .same_site(cookie::SameSite::Strict)
                    .path("/");
                set_cookie = Some(c.build().to_string());
            }
            next.run(req).await
        }
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // No address leaves for another site; the viewer's own forms keep their `Origin` (with
    // `no-referrer` a browser sends `Origin: null`, which the post check refuses).
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
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
        .route("/row", get(detail::row))
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
