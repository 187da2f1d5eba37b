print("apns: the demo arrives with the APNsPayload module")
