//! The health sweep's analyzers against a real Prometheus holding backfilled series: the
//! series of real exporters (several hosts, thousands of series) with an incident written
//! into a few of them. `world` is the harness every analyzer test uses. The analyzers of
//! other integrations run against fakes speaking their real wire formats (`kube_cluster`).

mod access_logs;
mod appliances;
mod availability;
mod btrfs;
mod captured;
mod changes;
mod clock;
mod containers_back;
mod exposition;
mod exposition_text;
mod filesystem;
mod full_and_growing;
mod host;
mod inventory;
mod kube;
mod kube_backends;
mod kube_cluster;
mod kube_gitops;
mod kube_multi_attach;
mod kube_pod_capacity;
mod kube_state;
mod kube_state_backends;
mod kube_volumes;
mod latency;
mod limit_members;
mod limits;
mod link_speed;
mod log_changes;
mod log_joins;
mod log_world;
mod logs;
mod major_faults;
mod memory;
mod onset;
mod pbs_backups;
mod pbs_verify;
mod probe_dns;
mod probe_tls;
mod proxmox_balloon;
mod proxmox_load;
mod proxmox_replication;
mod proxmox_storage;
mod proxmox_unprotected;
mod reboots;
mod saturation;
mod smart;
mod steps;
mod stopped_times;
mod truenas;
mod truenas_resilver;
mod truenas_tasks;
mod twice_and_vanished;
pub mod world;
