//! Issue 15, proven by attack: secrets inside configured URLs never leave (`secrets`), what
//! the model chooses cannot steer a request off its target nor make an upstream answer
//! cost its size (`targets`), webhook and API auth cannot lock out or fail open (`auth`),
//! slow or abusive clients are cut off (`abuse`), and the daily budgets hold for every
//! trigger (`budget`).

mod abuse;
mod auth;
mod budget;
mod secrets;
mod targets;
