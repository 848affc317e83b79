//! The `*_file` secrets: every secret `X` may instead be read from the file named by
//! `X_file`. Each section declares its pairs once, next to its fields, with
//! [`secret_fields!`]; [`resolve`] walks every section of the [`Config`](super::Config).

use std::path::{Path, PathBuf};

use super::ConfigError;
use super::values::Secret;

/// One secret of a section and the file it may be read from.
pub(crate) struct SecretField<'a> {
    /// `server.api_token_file`, `tools.http[0].header_value_file`.
    pub file_key: String,
    pub file: &'a Option<PathBuf>,
    pub secret: &'a mut Option<Secret>,
}

/// A config section and the secrets it holds (none unless declared).
pub(crate) trait SecretFields {
    /// Appends this section's secrets, their keys prefixed with `prefix` (`server`).
    fn secret_fields<'a>(&'a mut self, _prefix: &str, _out: &mut Vec<SecretField<'a>>) {}
}

impl<T: SecretFields> SecretFields for Vec<T> {
    fn secret_fields<'a>(&'a mut self, prefix: &str, out: &mut Vec<SecretField<'a>>) {
        for (i, item) in self.iter_mut().enumerate() {
            item.secret_fields(&format!("{prefix}[{i}]"), out);
        }
    }
}

/// Declares the `secret: secret_file` pairs of a section struct:
/// `secret_fields!(SmtpConfig { password: password_file });`, or none: `secret_fields!(LogConfig);`.
macro_rules! secret_fields {
    ($ty:ty) => {
        impl $crate::config::secrets::SecretFields for $ty {}
    };
    ($ty:ty { $($secret:ident: $file:ident),+ $(,)? }) => {
        impl $crate::config::secrets::SecretFields for $ty {
            fn secret_fields<'a>(
                &'a mut self,
                prefix: &str,
                out: &mut Vec<$crate::config::secrets::SecretField<'a>>,
            ) {
                $(out.push($crate::config::secrets::SecretField {
                    file_key: format!("{prefix}.{}", stringify!($file)),
                    file: &self.$file,
                    secret: &mut self.$secret,
                });)+
            }
        }
    };
}
pub(crate) use secret_fields;

/// Replaces every secret whose `_file` is set with the file's content (without the final
/// newline), then drops empty secrets: a blank env var must not enable auth with "".
pub(crate) fn resolve(fields: Vec<SecretField<'_>>) -> Result<(), ConfigError> {
    for field in fields {
        if let Some(path) = field.file {
            *field.secret = Some(read_secret_file(&field.file_key, path)?);
        }
        if field.secret.as_ref().is_some_and(Secret::is_empty) {
            *field.secret = None;
        }
    }
    Ok(())
}

fn read_secret_file(key: &str, path: &Path) -> Result<Secret, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Secret::new(s.trim_end_matches(['\n', '\r']))),
        Err(e) => Err(ConfigError::Invalid(format!(
            "{key}: cannot read {:?}: {e}",
            path.display().to_string()
        ))),
    }
}
