// APNsTransport: filled by a later issue.

/// A placeholder so the module builds until its issue lands.
enum _APNsTransportPlaceholder {}
