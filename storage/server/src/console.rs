//! `--console-dir`: the node serves the web console's built bundle (what
//! `npm run build` writes to `console/dist`) beside the API, so a
//! deployment needs no other web server; the gateway routes `/` to any
//! node.
//!
//! Only what the bundle holds is served, each at a fixed route (so the
//! metrics name a bounded set of routes): `/` (its `index.html`), every
//! other file at the top of the directory, and `/assets/*`. The console
//! routes by URL fragment, so no other path needs an answer; anything else
//! falls through to the API's 404. Vite names the files under `assets/`
//! after their content, so those are cached for good; everything else is
//! revalidated.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::http::{HeaderValue, Response, header};
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

/// The folder of content-hashed files in a Vite build.
const ASSETS: &str = "assets";

/// Cache-Control for a file at `path` of the bundle.
fn cache_control(path: &str) -> HeaderValue {
    if path.starts_with(&format!("/{ASSETS}/")) {
        HeaderValue::from_static("public, max-age=31536000, immutable")
    } else {
        HeaderValue::from_static("no-cache")
    }
}

/// The routes serving the bundle in `dir`; fails when `dir` holds no
/// `index.html` (not a built console).
pub fn router(dir: &Path) -> Result<Router> {
    let index = dir.join("index.html");
    if !index.is_file() {
        bail!(
            "--console-dir {}: no index.html there (build the console with `npm run build` in console/)",
            dir.display()
        );
    }
    let mut router =
        Router::new().route_service("/", with_cache(ServeFile::new(&index), cache_control("/")));
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if entry.file_type()?.is_file() {
            let route = format!("/{name}");
            let cache = cache_control(&route);
            router = router.route_service(&route, with_cache(ServeFile::new(entry.path()), cache));
        }
    }
    if dir.join(ASSETS).is_dir() {
        let cache = cache_control(&format!("/{ASSETS}/"));
        router = router.route_service(
            &format!("/{ASSETS}/{{*file}}"),
            with_cache(ServeDir::new(PathBuf::from(dir)), cache),
        );
    }
    Ok(router)
}

/// `service`, its successful answers carrying `cache` as Cache-Control.
fn with_cache<S, B>(
    service: S,
    cache: HeaderValue,
) -> impl tower::Service<
    axum::extract::Request,
    Response = Response<B>,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone
+ Send
+ Sync
+ 'static
where
    S: tower::Service<
            axum::extract::Request,
            Response = Response<B>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    service.map_response(move |mut resp: Response<B>| {
        if resp.status().is_success() {
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, cache.clone());
        }
        resp
    })
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use http_body_util::BodyExt;

    use super::*;

    async fn get(router: &Router, path: &str) -> (StatusCode, Option<String>, String) {
        let resp = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let cache = resp
            .headers()
            .get(header::CACHE_CONTROL)
            .map(|v| v.to_str().unwrap().to_string());
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, cache, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn serves_the_bundle_at_fixed_routes_with_cache_headers() {
        // Proves: `/` is index.html, top-level files and hashed assets are
        // served (assets cached for good, the rest revalidated), a path
        // outside the bundle is not answered here, and a directory that is
        // not a built console is refused at start.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<html>console</html>").unwrap();
        std::fs::write(dir.path().join("favicon.svg"), "<svg/>").unwrap();
        std::fs::create_dir(dir.path().join("assets")).unwrap();
        std::fs::write(dir.path().join("assets/app-1a2b.js"), "js()").unwrap();
        let router = router(dir.path()).unwrap();

        let (status, cache, body) = get(&router, "/").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, "<html>console</html>")
        );
        assert_eq!(cache.as_deref(), Some("no-cache"));
        let (status, _, body) = get(&router, "/favicon.svg").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "<svg/>"));
        let (status, cache, body) = get(&router, "/assets/app-1a2b.js").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "js()"));
        assert_eq!(
            cache.as_deref(),
            Some("public, max-age=31536000, immutable")
        );
        let (status, _, _) = get(&router, "/assets/missing.js").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _, _) = get(&router, "/v1/kv/x").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "not a console route");

        let empty = tempfile::tempdir().unwrap();
        let err = super::router(empty.path()).unwrap_err();
        assert!(err.to_string().contains("no index.html"), "{err}");
    }
}
