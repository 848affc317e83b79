//! The API token of a daemon listening beyond loopback without `server.api_token`: the API
//! must not be open to the network, so one is generated once, kept in the data directory
//! (mode 0600) and used from then on; the CLI on the same host reads it from there.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::config::{Config, Secret};

/// The file a generated API token is kept in, inside `server.data_dir`.
pub const FILE_NAME: &str = "api-token";

/// Where the generated token of `config` lives.
pub fn path(config: &Config) -> PathBuf {
    config.server.data_dir.join(FILE_NAME)
}

/// When `config` listens beyond loopback with no `server.api_token`, sets it to the token
/// kept in the data directory, generating that first; returns the file when it did.
pub fn ensure(config: &mut Config) -> std::io::Result<Option<PathBuf>> {
    if config.server.api_token.is_some() || config.listen_addr().ip().is_loopback() {
        return Ok(None);
    }
    let file = path(config);
    let token = match read(&file)? {
        Some(t) => t,
        None => create(&file)?,
    };
    config.server.api_token = Some(Secret::new(token));
    Ok(Some(file))
}

/// The token kept for `config`, if a daemon generated one (for the CLI).
pub fn generated(config: &Config) -> Option<Secret> {
    read(&path(config)).ok().flatten().map(Secret::new)
}

fn read(file: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text.trim().to_string()).filter(|t| !t.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn create(file: &Path) -> std::io::Result<String> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let token = hex::encode(rand::random::<[u8; 32]>());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(file)?;
    // `mode` applies to a new file only; an empty one left behind is tightened too.
    #[cfg(unix)]
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    writeln!(f, "{token}")?;
    f.sync_all()?;
    Ok(token)
}
