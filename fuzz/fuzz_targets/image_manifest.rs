//! Registry answers: a manifest's media type, then its body as the image code decodes it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE, OciImageIndex, OciImageManifest,
};
use image::remote::manifest_media_type;

fuzz_target!(|data: &[u8]| {
    let Ok(media_type) = manifest_media_type(data) else {
        return;
    };
    if media_type == OCI_IMAGE_INDEX_MEDIA_TYPE || media_type == IMAGE_MANIFEST_LIST_MEDIA_TYPE {
        let _ = serde_json::from_slice::<OciImageIndex>(data);
    } else {
        let _ = serde_json::from_slice::<OciImageManifest>(data);
    }
});
