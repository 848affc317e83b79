//! The delivery channels of the outbox, one per kind of `outbox::Payload`.

crate::telemetry::labelled! {
    /// The delivery channels: the `channel` label of `sre_agent_notifications_total`, one
    /// per kind of `Payload`.
    pub enum Channel {
        /// Finding emails.
        Email => "email",
        /// Finding webhooks.
        Webhook => "webhook",
        /// The weekly report email.
        Report => "report",
        /// Grafana annotations.
        Grafana => "grafana",
    }
}
