//! Browser sessions and CSRF tokens of the console, signed (HMAC-SHA256): the session
//! cookie trades `server.api_token` for `<expiry>.<nonce>.<mac>` under a key derived from
//! the token (a changed token ends every session; a restart does not); logging out ends
//! the session on the server too: its nonce is kept in the store until its expiry, so a
//! copy of the cookie opens nothing afterwards, across restarts. The CSRF token of a form
//! is the MAC of the browser's `sre_csrf` cookie under a key made at start (signed double
//! submit). Both cookies are HttpOnly and SameSite=Strict. Login attempts are throttled per
//! client (`login_throttle.rs`).

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use chrono::Utc;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::login_throttle::LoginThrottle;
use crate::config::{Secret, secure_eq};
use crate::store::{StoreError, Tree};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "sre_session";
/// The CSRF anchor cookie's name.
pub const CSRF_COOKIE: &str = "sre_csrf";
/// How long a console login lasts.
pub const SESSION_SECONDS: i64 = 12 * 3600;
/// The store tree of sessions ended by logout before their expiry (nonce → expiry).
pub const ENDED_SESSIONS: &str = "console_ended_sessions";
/// Ended sessions kept at most; past it the soonest to expire is forgotten first. Only a
/// logged-in browser can end one, so this many logouts within a session's lifetime is far
/// beyond any real use.
const MAX_ENDED_SESSIONS: usize = 10_000;

/// The console's signing keys, its ended sessions and its login throttle. Cheap to clone.
#[derive(Clone)]
pub struct ConsoleKeys {
    /// `None` when no `server.api_token` is set (no login needed).
    session: Option<[u8; 32]>,
    csrf: [u8; 32],
    /// Nonces of sessions ended by logout, with their expiry.
    ended: Option<Tree<i64>>,
    logins: Arc<LoginThrottle>,
}

impl ConsoleKeys {
    pub fn new(api_token: Option<&Secret>) -> Self {
        let session = api_token.map(|t| {
            let mut h = Sha256::new();
            h.update(b"sre-agent console session key\0");
            h.update(t.expose().as_bytes());
            h.finalize().into()
        });
        Self {
            session,
            csrf: rand::random(),
            ended: None,
            logins: Arc::default(),
        }
    }

    /// Keeps the sessions ended by logout in `ended` (the [`ENDED_SESSIONS`] tree).
    pub fn with_ended_sessions(mut self, ended: Tree<i64>) -> Self {
        self.ended = Some(ended);
        self
    }

    /// The login attempts of each client.
    pub fn logins(&self) -> &LoginThrottle {
        &self.logins
    }

    /// Whether the console needs a login (`server.api_token` is set).
    pub fn login_required(&self) -> bool {
        self.session.is_some()
    }

    /// A new session cookie value, valid for [`SESSION_SECONDS`].
    pub fn new_session(&self) -> Option<String> {
        let key = self.session.as_ref()?;
        let expires = Utc::now().timestamp() + SESSION_SECONDS;
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        let payload = format!("{expires}.{nonce}");
        Some(format!("{payload}.{}", mac(key, &payload)))
    }

    /// Whether the request carries a valid, unexpired session cookie that was not ended.
    pub fn has_session(&self, headers: &HeaderMap) -> bool {
        self.valid_session(headers)
            .is_some_and(|(_, nonce)| !self.was_ended(nonce))
    }

    /// The expiry and nonce of the request's session cookie, when its MAC is right and it
    /// has not expired.
    fn valid_session<'h>(&self, headers: &'h HeaderMap) -> Option<(i64, &'h str)> {
        let key = self.session.as_ref()?;
        let value = cookie(headers, SESSION_COOKIE)?;
        let (payload, got) = value.rsplit_once('.')?;
        let (expires, nonce) = payload.split_once('.')?;
        let expires = expires.parse::<i64>().ok()?;
        let signed = secure_eq(got.as_bytes(), mac(key, payload).as_bytes());
        (signed && expires > Utc::now().timestamp()).then_some((expires, nonce))
    }

    /// Whether the session `nonce` was ended by a logout (or cannot be told: then it is
    /// taken as ended, so a store error never reopens a session).
    fn was_ended(&self, nonce: &str) -> bool {
        self.ended.as_ref().is_some_and(|ended| {
            ended.contains(nonce).unwrap_or_else(|e| {
                tracing::error!(error = %e, "cannot read the console's ended sessions");
                true
            })
        })
    }

    /// Ends the request's session on the server (logout): its cookie, or any copy of it,
    /// opens nothing from now on.
    pub async fn end_session(&self, headers: &HeaderMap) -> Result<(), StoreError> {
        let (Some(ended), Some((expires, nonce))) = (&self.ended, self.valid_session(headers))
        else {
            return Ok(());
        };
        ended.insert(nonce, &expires)?;
        if ended.len() > MAX_ENDED_SESSIONS {
            forget_ended(ended, Utc::now().timestamp())?;
        }
        ended.flush().await
    }

    /// The CSRF token that forms of a browser with the anchor cookie `anchor` carry.
    pub fn csrf_token(&self, anchor: &str) -> String {
        mac(&self.csrf, &format!("csrf.{anchor}"))
    }

    /// Whether `token` is the CSRF token of the request's anchor cookie.
    pub fn csrf_ok(&self, headers: &HeaderMap, token: &str) -> bool {
        cookie(headers, CSRF_COOKIE)
            .filter(|a| !a.is_empty())
            .is_some_and(|a| secure_eq(token.as_bytes(), self.csrf_token(a).as_bytes()))
    }
}

/// Removes the ended sessions that have expired anyway and, while there are still more than
/// [`MAX_ENDED_SESSIONS`], the soonest to expire.
fn forget_ended(ended: &Tree<i64>, now: i64) -> Result<(), StoreError> {
    let mut live = Vec::new();
    for entry in ended.iter() {
        let (nonce, expires) = entry?;
        if expires <= now {
            ended.remove(&nonce)?;
        } else {
            live.push((expires, nonce));
        }
    }
    if live.len() > MAX_ENDED_SESSIONS {
        live.sort_unstable();
        for (_, nonce) in &live[..live.len() - MAX_ENDED_SESSIONS] {
            ended.remove(nonce)?;
        }
    }
    Ok(())
}

/// A fresh random CSRF anchor.
pub fn new_anchor() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Strict, for the whole site. `max_age` 0 deletes.
pub fn set_cookie(name: &str, value: &str, max_age: Option<i64>) -> String {
    let age = max_age
        .map(|s| format!("; Max-Age={s}"))
        .unwrap_or_default();
    format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict{age}")
}

/// The value of cookie `name` in the request, if any.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

fn mac(key: &[u8; 32], payload: &str) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(payload.as_bytes());
    hex::encode(m.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn with_cookie(c: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_str(c).unwrap());
        h
    }

    #[test]
    fn a_session_is_valid_only_with_its_own_mac_under_the_same_token() {
        let keys = ConsoleKeys::new(Some(&Secret::new("t0k")));
        let s = keys.new_session().unwrap();
        assert!(keys.has_session(&with_cookie(&format!("a=b; {SESSION_COOKIE}={s}"))));
        let forged = format!("{}0.x.{}", &s[..10], &s[s.rfind('.').unwrap() + 1..]);
        assert!(!keys.has_session(&with_cookie(&format!("{SESSION_COOKIE}={forged}"))));
        let other = ConsoleKeys::new(Some(&Secret::new("other")));
        assert!(!other.has_session(&with_cookie(&format!("{SESSION_COOKIE}={s}"))));
        let expired_payload = format!("{}.n", Utc::now().timestamp() - 1);
        let expired = format!(
            "{expired_payload}.{}",
            mac(keys.session.as_ref().unwrap(), &expired_payload)
        );
        assert!(!keys.has_session(&with_cookie(&format!("{SESSION_COOKIE}={expired}"))));
        assert!(ConsoleKeys::new(None).new_session().is_none());
    }

    #[tokio::test]
    async fn an_ended_session_opens_nothing_and_expired_ones_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(dir.path()).unwrap();
        let ended = store.tree::<i64>(ENDED_SESSIONS).unwrap();
        let keys = ConsoleKeys::new(Some(&Secret::new("t0k"))).with_ended_sessions(ended.clone());
        let (a, b) = (keys.new_session().unwrap(), keys.new_session().unwrap());
        let (a, b) = (
            with_cookie(&format!("{SESSION_COOKIE}={a}")),
            with_cookie(&format!("{SESSION_COOKIE}={b}")),
        );
        keys.end_session(&a).await.unwrap();
        assert!(!keys.has_session(&a));
        assert!(
            keys.has_session(&b),
            "only the session that logged out ends"
        );
        // A forged cookie is not recorded.
        keys.end_session(&with_cookie(&format!("{SESSION_COOKIE}=1.2.3")))
            .await
            .unwrap();
        assert_eq!(ended.len(), 1);

        let now = Utc::now().timestamp();
        for i in 0..MAX_ENDED_SESSIONS + 15 {
            let expires = if i < 10 { now - 1 } else { now + i as i64 };
            ended.insert(format!("n{i:05}"), &expires).unwrap();
        }
        forget_ended(&ended, now).unwrap();
        assert_eq!(ended.len(), MAX_ENDED_SESSIONS);
        assert!(!ended.contains("n00003").unwrap(), "expired: forgotten");
        assert!(
            !ended.contains("n00010").unwrap(),
            "the soonest to expire next"
        );
        assert!(
            ended.contains("n10014").unwrap(),
            "the latest to expire are kept"
        );
        assert!(!keys.has_session(&a), "still ended");
    }

    #[test]
    fn a_csrf_token_matches_only_the_anchor_cookie_it_was_made_for() {
        let keys = ConsoleKeys::new(None);
        let token = keys.csrf_token("abc");
        assert!(keys.csrf_ok(&with_cookie(&format!("{CSRF_COOKIE}=abc")), &token));
        assert!(!keys.csrf_ok(&with_cookie(&format!("{CSRF_COOKIE}=abd")), &token));
        assert!(!keys.csrf_ok(&HeaderMap::new(), &token));
        assert!(!keys.csrf_ok(
            &with_cookie(&format!("{CSRF_COOKIE}=")),
            &keys.csrf_token("")
        ));
        assert!(
            !ConsoleKeys::new(None).csrf_ok(&with_cookie(&format!("{CSRF_COOKIE}=abc")), &token)
        );
    }
}
