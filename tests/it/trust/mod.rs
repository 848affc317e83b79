//! Issue 15, proven by attack: secrets inside configured URLs never leave (`secrets`), and
//! what the model chooses cannot steer a request off its target nor make an upstream
//! answer cost its size (`targets`).

mod secrets;
mod targets;
