//! Link flags for the daemon binary.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SRE_AGENT_PACK_RELOCS");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let wanted = std::env::var("SRE_AGENT_PACK_RELOCS").map_or(true, |v| v != "0");
    if os == "linux" && env == "gnu" && wanted {
        // Relative relocations packed as DT_RELR (binutils >= 2.38; the binary then needs
        // glibc >= 2.36 to run): the position-independent binary's 1.7 MB table of relative
        // relocations, read at every start and kept resident, becomes 28 kB (resident
        // memory 1.7 MiB lower). `SRE_AGENT_PACK_RELOCS=0` builds without it, for hosts
        // with an older glibc (Debian 11, Ubuntu 22.04).
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
