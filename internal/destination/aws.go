package destination

import "regexp"

// AWSFields are fields before the region, the access key and an endpoint,
// which every AWS type shares. The key is the account's own, required:
// never the credentials herald's process runs with, which could reach any
// queue or bus herald's own role can (decision 0145).
func AWSFields(own []Field) []Field {
	return append(own,
		Field{Path: "region", Label: "Region", Kind: Text, Required: true, Hint: "us-east-1, eu-west-1, …"},
		Field{Path: "accessKeyId", Label: "Access key id", Kind: Text, Required: true,
			Hint: "An IAM user's key, allowed to publish here and nothing else"},
		Field{Path: "secretAccessKey", Label: "Secret access key", Kind: Secret, Required: true, Hint: "Kept encrypted and never shown again"},
		Field{Path: "endpoint", Label: "Endpoint", Kind: URL, Address: URLHost, Schemes: []string{"https", "http"},
			Hint: "An AWS-compatible server's URL; empty for AWS's own"},
	)
}

var region = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// CheckAWS checks what AWSFields added.
func CheckAWS(c Config, add func(path, detail string)) {
	if !region.MatchString(c.String("region")) {
		add("region", "must be an AWS region such as us-east-1")
	}
}
