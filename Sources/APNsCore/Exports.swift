// APNsCore re-exports APNsPayload, so `import APNsCore` (or `import APNsTransport`)
// is the one import a provider needs.
@_exported import APNsPayload
