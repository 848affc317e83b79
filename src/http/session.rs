//! Browser sessions and CSRF tokens of the console, stateless and signed (HMAC-SHA256):
//! the session cookie trades `server.api_token` for `<expiry>.<nonce>.<mac>` under a key
//! derived from the token (a changed token ends every session; a restart does not); the
//! CSRF token of a form is the MAC of the browser's `sre_csrf` cookie under a key made at
//! start (signed double submit). Both cookies are HttpOnly and SameSite=Strict.

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use chrono::Utc;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::config::Secret;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "sre_session";
/// The CSRF anchor cookie's name.
pub const CSRF_COOKIE: &str = "sre_csrf";
/// How long a console login lasts.
pub const SESSION_SECONDS: i64 = 12 * 3600;

/// The console's signing keys. Cheap to clone.
#[derive(Clone)]
pub struct ConsoleKeys {
    /// `None` when no `server.api_token` is set (no login needed).
    session: Option<[u8; 32]>,
    csrf: [u8; 32],
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
        }
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

    /// Whether the request carries a valid, unexpired session cookie.
    pub fn has_session(&self, headers: &HeaderMap) -> bool {
        let (Some(key), Some(value)) = (self.session.as_ref(), cookie(headers, SESSION_COOKIE))
        else {
            return false;
        };
        let Some((payload, got)) = value.rsplit_once('.') else {
            return false;
        };
        let unexpired = payload
            .split_once('.')
            .and_then(|(exp, _)| exp.parse::<i64>().ok())
            .is_some_and(|exp| exp > Utc::now().timestamp());
        unexpired && secure_eq(got.as_bytes(), mac(key, payload).as_bytes())
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

/// Constant-time equality (`auth.rs` has the same; this file must not import it: auth
/// reads sessions).
fn secure_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
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
