//! Validated configuration value types. Each one deserializes from a string and, when the
//! string is bad, fails with a message naming the bad value; figment adds the key.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A secret string: prints as `***` in Debug, Display and Serialize.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that sends it upstream.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Constant-time equality of two byte strings (their length is not secret): how a
/// credential someone sent is compared with a [`Secret`], or a MAC with one keyed by it.
pub fn secure_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Env values such as SRE_AGENT_WEBHOOK__TOKEN=12345 arrive as numbers.
        let value = StringLike::deserialize(d)?;
        Ok(Self(value.0))
    }
}

/// Accepts a string, or a number/bool that figment's env provider parsed, as a string.
struct StringLike(String);

impl<'de> Deserialize<'de> for StringLike {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            S(String),
            I(i64),
            U(u64),
            F(f64),
            B(bool),
        }
        Ok(Self(match Raw::deserialize(d)? {
            Raw::S(s) => s,
            Raw::I(i) => i.to_string(),
            Raw::U(u) => u.to_string(),
            Raw::F(f) => f.to_string(),
            Raw::B(b) => b.to_string(),
        }))
    }
}

/// Defines a newtype that parses from a string with `parse` and serializes back with `show`.
macro_rules! string_value {
    ($(#[$doc:meta])* $name:ident($inner:ty), $what:literal, |$s:ident| $parse:expr, |$v:ident| $show:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name(pub $inner);

        impl FromStr for $name {
            type Err = String;
            fn from_str($s: &str) -> Result<Self, String> {
                let parsed: Result<$inner, String> = $parse;
                parsed
                    .map($name)
                    .map_err(|why| format!(concat!("invalid ", $what, " {:?}{}"), $s, why))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = StringLike::deserialize(d)?;
                raw.0.parse().map_err(serde::de::Error::custom)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let $v = &self.0;
                s.serialize_str($show)
            }
        }
    };
}

string_value!(
    /// A human duration such as "30s", "5m", "1h", "7d", at most [`MAX_DURATION`].
    HumanDuration(Duration), "duration",
    |s| match humantime::parse_duration(s.trim()) {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        Ok(_) => Err(" (at most 100 years)".to_string()),
        Err(_) => Err(String::new()),
    },
    |v| &humantime::format_duration(*v).to_string()
);

/// The longest duration a key may hold: added to a clock, doubled by a backoff, multiplied
/// by retries or taken from today's date, it stays far inside what the types can hold.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 86_400);

string_value!(
    /// A 6-field cron expression, seconds first: "0 0 8 * * Mon".
    CronSchedule(String), "cron expression",
    |s| parse_cron(s).map(|_| s.trim().to_string()),
    |v| v.as_str()
);

string_value!(
    /// An IANA time zone name such as "Europe/Berlin".
    TimeZone(chrono_tz::Tz), "time zone",
    |s| s.trim().parse::<chrono_tz::Tz>().map_err(|_| " (expected an IANA name such as \"Europe/Berlin\")".to_string()),
    |v| v.name()
);

string_value!(
    /// An email address, optionally with a display name: "Ops <ops@example.org>".
    EmailAddress(lettre::message::Mailbox), "email address",
    |s| s.trim().parse::<lettre::message::Mailbox>().map_err(|e| format!(" ({e})")),
    |v| &v.to_string()
);

/// An absolute http(s) URL. It may carry credentials (`https://user:pass@host/`, a
/// `?token=` query), so everything that shows it — `Debug`, `Display`, `Serialize` (what
/// `check-config` prints) — shows [`HttpUrl::redacted`]; the real URL is `.0`, for the one
/// place that sends requests to it.
#[derive(Clone, PartialEq)]
pub struct HttpUrl(pub url::Url);

impl HttpUrl {
    /// The URL without credentials or query: see [`redact_url`].
    pub fn redacted(&self) -> String {
        redact_url(&self.0)
    }
}

impl FromStr for HttpUrl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match url::Url::parse(s.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(Self(u)),
            // The bad value is echoed without what could be credentials.
            Ok(u) => Err(format!(
                "invalid URL {:?} (expected an http:// or https:// URL)",
                redact_url(&u)
            )),
            Err(e) => Err(format!("invalid URL {:?} ({e})", mask_userinfo(s.trim()))),
        }
    }
}

impl<'de> Deserialize<'de> for HttpUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = StringLike::deserialize(d)?;
        raw.0.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for HttpUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HttpUrl({:?})", self.redacted())
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// An http(s) URL that is itself a credential: a Slack or Mattermost incoming webhook
/// (`/services/T…/B…/secret`, `/hooks/secret`), an ntfy topic, a `?token=` query. Shown
/// everywhere as `scheme://host/…` ([`redact_secret_url`]); `expose` gives the real URL to
/// the one place that posts to it.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct SecretUrl(HttpUrl);

impl SecretUrl {
    /// The URL itself, for the one place that sends to it.
    pub fn expose(&self) -> &url::Url {
        &self.0.0
    }

    /// `scheme://host[:port]/…`.
    pub fn redacted(&self) -> String {
        redact_secret_url(self.expose().as_str())
    }
}

impl FromStr for SecretUrl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.parse().map(Self)
    }
}

impl Serialize for SecretUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretUrl({:?})", self.redacted())
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// The URL safe for logs, errors and `check-config`: user and password become `***`, the
/// query and fragment are dropped (a `?token=` is a credential; a PromQL query is noise).
pub fn redact_url(url: &url::Url) -> String {
    let mut u = url.clone();
    let had_credentials = !u.username().is_empty() || u.password().is_some();
    let _ = u.set_password(None);
    let _ = u.set_username(if had_credentials { "***" } else { "" });
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// `s` with anything before an `@` of its authority shown as `***` (for text that does
/// not parse as a URL but may still hold credentials).
pub(super) fn mask_userinfo(s: &str) -> String {
    let start = s.find("://").map_or(0, |i| i + 3);
    let authority_end = s[start..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| start + i);
    match s[start..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &s[..start], &s[start + at..]),
        None => s.to_string(),
    }
}

/// A URL whose path or query is the secret, shown as `scheme://host[:port]/…` only; text
/// that is not a URL is shown as `…`.
pub fn redact_secret_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(host), Some(port)) => format!("{}://{host}:{port}/…", u.scheme()),
            (Some(host), None) => format!("{}://{host}/…", u.scheme()),
            (None, _) => format!("{}:…", u.scheme()),
        },
        Err(_) => "…".to_string(),
    }
}

/// Parses a 6-field cron string the way the scheduler will.
pub fn parse_cron(s: &str) -> Result<croner::Cron, String> {
    let fields = s.split_whitespace().count();
    if fields != 6 {
        return Err(format!(
            " (expected 6 fields, seconds first, e.g. \"0 0 8 * * Mon\"; got {fields})"
        ));
    }
    croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Required)
        .build()
        .parse(s.trim())
        .map_err(|e| format!(" ({e})"))
}

impl HumanDuration {
    pub fn secs(n: u64) -> Self {
        Self(Duration::from_secs(n))
    }

    pub fn get(&self) -> Duration {
        self.0
    }
}

impl Default for TimeZone {
    fn default() -> Self {
        Self(chrono_tz::UTC)
    }
}
