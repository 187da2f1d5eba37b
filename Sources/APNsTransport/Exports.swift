// APNsTransport re-exports APNsCore (and through it APNsPayload), so
// `import APNsTransport` is the one import a provider needs.
@_exported import APNsCore
