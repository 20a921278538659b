#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    reviewflow_fuzz::keep_last(data);
    reviewflow_fuzz::reviewer(data);
});
