//! Issue 15, proven by attack: secrets inside configured URLs never leave (`secrets`), what
//! the model chooses cannot steer a request off its target nor make an upstream answer
//! cost its size (`targets`), webhook and API auth cannot lock out or fail open (`auth`),
//! slow or abusive clients are cut off (`abuse`), the daily budgets hold for every
//! trigger (`budget`), bad input on every route is a JSON error that stores nothing
//! (`bad_input`), and fuzzing finds nothing: proptest on the parsers (`fuzz`), schemathesis on
//! the live daemon (`schemathesis`) against the OpenAPI document (`openapi`). Issue 31: a
//! web page the operator visits cannot drive the daemon (`browser`: content types,
//! origins, DNS rebinding) and the console login cannot be abused (`login`).

mod abuse;
mod auth;
mod bad_input;
mod browser;
mod budget;
mod fuzz;
mod login;
mod openapi;
mod schemathesis;
mod secrets;
mod targets;
