package store

// EmailDisabled is the email of a webhook herald disabled because its
// receiver answered 410 Gone.
const EmailDisabled = "disabled"
