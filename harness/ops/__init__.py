"""What a person runs around the missions: `init` (scaffold), `status`, `doctor` and
`demo`.
"""
