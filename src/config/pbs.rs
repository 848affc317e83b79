//! `[pbs]`: Proxmox Backup Server, plus how often each backup group is expected to get a
//! snapshot (for the weekly report's backups section).

use super::ConfigError;
use super::proxmox::proxmox_api_section;
use super::values::HumanDuration;

proxmox_api_section!(
    /// `[pbs]`: Proxmox Backup Server, plus how often each backup group is expected to get
    /// a snapshot (for the weekly report's backups section).
    PbsConfig {
        /// A group whose newest snapshot is older than this is reported as overdue.
        backup_interval: HumanDuration = HumanDuration::secs(26 * 3600),
    }
);

impl PbsConfig {
    /// Validates the section; errors name the key.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.api().validate("pbs")?;
        if self.backup_interval.get().is_zero() {
            return Err(ConfigError::Invalid(
                "pbs.backup_interval: must be more than 0s".into(),
            ));
        }
        Ok(())
    }
}
