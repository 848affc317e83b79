//! Containers that cannot get their image: the kubelet's image errors (`ErrImagePull`,
//! `ImagePullBackOff`, `InvalidImageName`, …, as `pkg/kubelet/images/types.go` names
//! them), with the image and the message of the event that names it (the registry's
//! answer: not found, unauthorized, unreachable).

use k8s_openapi::api::core::v1::ContainerStatus;

use super::PODS as NAME;
use super::view::{PodView, first_seen, waiting_message, waiting_reason};
use super::{describe_source, image_of, pod_entity};
use crate::analyze::{Fact, FactClass, Severity};

/// The waiting reasons the kubelet gives when it cannot pull or use an image.
const IMAGE_REASONS: [&str; 7] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "ImageInspectError",
    "RegistryUnavailable",
    "SignatureValidationFailed",
];

/// The fact about `cs` when it waits for its image.
pub fn fact(v: &PodView, cs: &ContainerStatus) -> Option<Fact> {
    let reason = waiting_reason(cs).filter(|r| IMAGE_REASONS.contains(r))?;
    let image = image_of(v.pod, &cs.name).unwrap_or_else(|| cs.image.clone());
    // The kubelet's events that quote the image carry the registry's answer; the newest
    // "Failed" one is the pull error itself, a "BackOff" one only says it waits.
    let quotes = |m: &str| !image.is_empty() && m.contains(image.as_str());
    let event = v
        .event(Some("Failed"), |m| quotes(m))
        .or_else(|| v.event(None, |m| quotes(m)));
    let message = event
        .and_then(|e| e.message.as_deref())
        .or_else(|| waiting_message(cs))
        .unwrap_or_default();
    let detail = match message.contains(image.as_str()) {
        true => once(message, &image),
        false => format!("image {image}: {message}"),
    };
    let since = v
        .events
        .iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| !image.is_empty() && m.contains(image.as_str()))
        })
        .filter_map(|e| first_seen(e))
        .min()
        .or_else(|| v.condition_since("Ready", "False"))
        .or_else(|| v.created());
    let mut entity = pod_entity(v.pod, Some(&cs.name));
    entity.labels.insert("image".into(), image.clone());
    Some(
        Fact::new(
            FactClass::Kubernetes,
            NAME,
            entity,
            format!("container {} {reason}", cs.name),
            Severity::Critical,
            describe_source(v.pod),
        )
        .since(since)
        .detail(detail),
    )
}

/// `message` with `image` spelled out once: the runtime repeats it at every layer of its
/// error ("failed to pull … failed to resolve reference …"), which would push the
/// registry's answer at the end out of the fact's detail.
fn once(message: &str, image: &str) -> String {
    match message.split_once(image) {
        Some((head, rest)) if !image.is_empty() => {
            format!("{head}{image}{}", rest.replace(image, "…"))
        }
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_image_is_spelled_once_so_the_registrys_answer_stays_in_the_detail() {
        let m = "Failed to pull image \"r/a:1\": failed to resolve reference \"r/a:1\": r/a:1: not found";
        assert_eq!(
            super::once(m, "r/a:1"),
            "Failed to pull image \"r/a:1\": failed to resolve reference \"…\": …: not found"
        );
        assert_eq!(super::once("no image here", "r/a:1"), "no image here");
    }
}
