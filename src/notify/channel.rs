//! The delivery channels of the outbox, one per kind of `outbox::Payload`, and how one
//! delivery attempt ended.

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

crate::telemetry::labelled! {
    /// How one delivery attempt ended: the `status` label of
    /// `sre_agent_notifications_total`.
    pub enum Delivered {
        Sent => "sent",
        Failed => "failed",
        /// Failed, and tried again later.
        Retry => "retry",
        /// A report whose SMTP session a restart interrupted (not resent).
        Unconfirmed => "unconfirmed",
    }
}
